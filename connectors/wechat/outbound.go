package wechat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// outItem is one item of a sendmessage (§9, §11.2).
type outItem struct {
	Type      int    `json:"type"`
	TextItem  *wText `json:"text_item,omitempty"`
	ImageItem *struct {
		Media   cdnMedia `json:"media"`
		MidSize int64    `json:"mid_size"`
	} `json:"image_item,omitempty"`
	VideoItem *struct {
		Media     cdnMedia `json:"media"`
		VideoSize int64    `json:"video_size"`
	} `json:"video_item,omitempty"`
	FileItem *struct {
		Media    cdnMedia `json:"media"`
		FileName string   `json:"file_name"`
		Len      string   `json:"len"`
		MD5      string   `json:"md5,omitempty"`
	} `json:"file_item,omitempty"`
}

type wText struct {
	Text string `json:"text"`
}

// step is one sendmessage of an outbound message.
type step func(ctx context.Context, to, contextToken string) (string, error)

// outProgress remembers how many steps of a message were sent (the SDK's
// Channel.SaveProgress), so that a redelivery after a partial failure does
// not send them twice.
type outProgress struct {
	ID   string `json:"id"`
	Done int    `json:"done"`
}

// onMessage sends a final assistant message to the peer it answers: the
// caption first, then one sendmessage per file (§9). WeChat cannot edit a
// sent message, so no delta handler is registered and the SDK buffers
// deltas into this final.
func (c *Connector) onMessage(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	cl.stopTyping()
	steps := cl.steps(m.Text, m.Files)
	pr := outProgress{ID: m.MessageID}
	if _, err := ch.LoadProgress(ctx, m.MessageID, &pr); err != nil {
		return connector.Temporary(fmt.Errorf("wechat: load progress: %w", err))
	}
	if _, err = cl.run(ctx, steps, &pr); err != nil {
		return err
	}
	if err := ch.ClearProgress(ctx, m.MessageID); err != nil {
		cl.c.srv.Logger().Warn("wechat: clear progress", "err", err)
	}
	return nil
}

// run sends steps from pr.Done on, saving progress after each.
func (cl *Client) run(ctx context.Context, steps []step, pr *outProgress) ([]string, error) {
	to, token, err := cl.peer(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for i := pr.Done; i < len(steps); i++ {
		id, err := steps[i](ctx, to, token)
		if err != nil {
			return ids, cl.classify(err)
		}
		ids = append(ids, id)
		if pr.ID != "" {
			pr.Done = i + 1
			if err := cl.ch.SaveProgress(ctx, pr.ID, pr); err != nil {
				cl.c.srv.Logger().Warn("wechat: save progress", "err", err)
			}
		}
	}
	return ids, nil
}

// steps builds the sendmessage calls of text and files.
func (cl *Client) steps(text string, files []connector.File) []step {
	var out []step
	if strings.TrimSpace(text) != "" {
		out = append(out, func(ctx context.Context, to, tok string) (string, error) {
			return cl.send(ctx, to, tok, outItem{Type: 1, TextItem: &wText{Text: text}})
		})
	}
	for i := range files {
		f := &files[i]
		out = append(out, func(ctx context.Context, to, tok string) (string, error) {
			it, err := cl.mediaItem(ctx, to, f)
			if err != nil {
				return "", err
			}
			return cl.send(ctx, to, tok, it)
		})
	}
	return out
}

// mediaItem uploads f and returns its message item, classified by MIME
// type as the reference does: image/*, video/*, else a file (§11.2).
func (cl *Client) mediaItem(ctx context.Context, to string, f *connector.File) (outItem, error) {
	if f.Size > cl.c.opts.MaxMediaBytes {
		return outItem{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: fmt.Sprintf("file %s is larger than %d bytes", path.Base(f.Filename), cl.c.opts.MaxMediaBytes)}
	}
	r, err := f.Open()
	if err != nil {
		return outItem{}, fmt.Errorf("wechat: open file: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, cl.c.opts.MaxMediaBytes+1))
	r.Close()
	if err != nil {
		return outItem{}, fmt.Errorf("wechat: read file: %w", err)
	}
	mt := mediaFile
	switch {
	case strings.HasPrefix(f.MimeType, "image/") || f.Type == protocol.FileImage:
		mt = mediaImage
	case strings.HasPrefix(f.MimeType, "video/") || f.Type == protocol.FileVideo:
		mt = mediaVideo
	}
	up, err := cl.upload(ctx, to, mt, data)
	if err != nil {
		return outItem{}, err
	}
	media := cdnMedia{EncryptQueryParam: up.param, AESKey: officialKey(up.key), EncryptType: 1}
	var it outItem
	switch mt {
	case mediaImage:
		it.Type = 2
		it.ImageItem = &struct {
			Media   cdnMedia `json:"media"`
			MidSize int64    `json:"mid_size"`
		}{media, up.ctSize}
	case mediaVideo:
		it.Type = 5
		it.VideoItem = &struct {
			Media     cdnMedia `json:"media"`
			VideoSize int64    `json:"video_size"`
		}{media, up.ctSize}
	default:
		it.Type = 4
		name := path.Base(f.Filename)
		if name == "" || name == "." || name == "/" {
			name = "file"
		}
		it.FileItem = &struct {
			Media    cdnMedia `json:"media"`
			FileName string   `json:"file_name"`
			Len      string   `json:"len"`
			MD5      string   `json:"md5,omitempty"`
		}{media, name, itoa(up.rawSize), up.md5}
	}
	return it, nil
}

// send makes one sendmessage and returns its client_id. ret -2 ("prepare
// failed", reportedly a stale context_token) is retried once without the
// token; a second -2 is temporary (§4).
func (cl *Client) send(ctx context.Context, to, token string, it outItem) (string, error) {
	id := connector.NewID("xconn_")
	err := cl.sendOnce(ctx, to, token, id, it)
	var api *apiError
	if errors.As(err, &api) && api.Ret == -2 {
		if token != "" {
			cl.c.srv.Logger().Info("wechat: sendmessage prepare failed; retrying without the context token")
			id = connector.NewID("xconn_")
			err = cl.sendOnce(ctx, to, "", id, it)
		}
		if errors.As(err, &api) && api.Ret == -2 {
			err = connector.Temporary(err)
		}
	}
	return id, err
}

func (cl *Client) sendOnce(ctx context.Context, to, token, id string, it outItem) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	type msg struct {
		From         string    `json:"from_user_id"`
		To           string    `json:"to_user_id"`
		ClientID     string    `json:"client_id"`
		MessageType  int       `json:"message_type"`
		MessageState int       `json:"message_state"`
		Items        []outItem `json:"item_list"`
		ContextToken string    `json:"context_token,omitempty"`
	}
	req := struct {
		Msg  msg      `json:"msg"`
		Base baseInfo `json:"base_info"`
	}{msg{To: to, ClientID: id, MessageType: 2, MessageState: 2, Items: []outItem{it}, ContextToken: token}, cl.api.baseInfo()}
	return cl.api.post(ctx, "sendmessage", "ilink/bot/sendmessage", nil, req, nil)
}

// classify turns a target failure into what the ack and tool results say,
// without tokens or URLs: -14 expires the channel (not retryable),
// temporary failures are retryable, other refusals are not.
func (cl *Client) classify(err error) error {
	var perr *protocol.Error
	switch {
	case errors.As(err, &perr):
		return perr
	case errors.Is(err, errSessionExpired):
		cl.c.expire(cl.ch, "send")
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: "the WeChat session expired; scan the QR code again"}
	case connector.IsTemporary(err):
		cl.c.srv.Logger().Warn("wechat: send failed; will retry", "err", err)
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true,
			Message: "WeChat is not reachable right now"}
	}
	cl.c.srv.Logger().Warn("wechat: send refused", "err", err)
	var api *apiError
	if errors.As(err, &api) {
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: fmt.Sprintf("WeChat refused the message (ret %d)", api.Ret)}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "WeChat refused the message"}
}

// SendInput is wechat_message_send's input.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send; with a file it is sent first, as its own message."`
	File *connector.Upload `json:"file,omitempty" desc:"An optional file to send after the text."`
}

// SendResult is wechat_message_send's result.
type SendResult struct {
	// Sent is the number of WeChat messages sent; MessageIDs their
	// client ids.
	Sent       int      `json:"sent"`
	MessageIDs []string `json:"message_ids"`
}

// toolSend sends to the channel's current conversation peer, never to a
// free-form recipient.
func (c *Connector) toolSend(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
	if strings.TrimSpace(in.Text) == "" && in.File == nil {
		return SendResult{}, protocol.Errorf(protocol.CodeInvalidArguments, "text or file is required")
	}
	cl, err := c.clients.Get(call.Channel)
	if err != nil {
		return SendResult{}, err
	}
	var files []connector.File
	if in.File != nil && in.File.File != nil {
		files = append(files, *in.File.File)
	}
	ids, err := cl.run(ctx, cl.steps(in.Text, files), &outProgress{})
	if err != nil {
		msg := "sending to WeChat failed"
		if perr := protocol.AsError(err); perr != nil && perr.Message != "" {
			msg = perr.Message
		}
		return SendResult{}, &protocol.Error{Code: protocol.CodeToolInvokeFailed, Message: msg}
	}
	return SendResult{Sent: len(ids), MessageIDs: ids}, nil
}
