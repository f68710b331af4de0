package wecom

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/wecom/internal/wxcrypt"
	"github.com/xconn/xconn/protocol"
)

// A robot's files: inbound ones are downloaded from the message's URL and
// decrypted with its aeskey; outbound ones are uploaded over the long
// connection in three steps (aibot_upload_media_init with type, filename,
// total_size, total_chunks and md5; aibot_upload_media_chunk with
// upload_id, chunk_index and base64_data of at most 512 KiB;
// aibot_upload_media_finish with upload_id, answering media_id), as the
// official SDK does.

const (
	botChunk     = 512 << 10
	maxBotChunks = 100
)

// botFetch downloads and decrypts one file; a failure becomes a note.
func (c *Connector) botFetch(ctx context.Context, m botMedia, name string, ft protocol.FileType) (string, []connector.OutgoingFile) {
	if m.URL == "" {
		return "", nil
	}
	data, fname, err := c.botDownload(ctx, m)
	if err != nil {
		c.log.Warn("wecom robot: inbound file not forwarded", "err", err)
		return fmt.Sprintf("[%s not forwarded: the download failed]", name), nil
	}
	return "", []connector.OutgoingFile{outgoing(data, fname, name, ft)}
}

func (c *Connector) botDownload(ctx context.Context, m botMedia) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.api.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL, nil)
	if err != nil || (req.URL.Scheme != "https" && req.URL.Scheme != "http") {
		return nil, "", errors.New("bad file URL")
	}
	res, err := c.wsDial.Do(req)
	if err != nil {
		return nil, "", scrubURL(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("file download: HTTP %d", res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, c.maxFileBytes+64))
	if err != nil {
		return nil, "", scrubURL(err)
	}
	if int64(len(data)) > c.maxFileBytes+64 {
		return nil, "", errors.New("file too large")
	}
	if m.AESKey != "" {
		if data, err = wxcrypt.DecryptFile(m.AESKey, data); err != nil {
			return nil, "", err
		}
	}
	_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
	return data, params["filename"], nil
}

// botUpload uploads f over the long connection and returns its media_id.
func (c *Connector) botUpload(ctx context.Context, bc *botConn, typ, name string, f *connector.File) (string, error) {
	r, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("wecom: open file: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	r.Close()
	if err != nil {
		return "", fmt.Errorf("wecom: read file: %w", err)
	}
	if len(data) > maxFileBytes {
		return "", &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "the file is larger than WeCom's 20 MB"}
	}
	chunks := (len(data) + botChunk - 1) / botChunk
	if chunks == 0 {
		chunks = 1
	}
	if chunks > maxBotChunks {
		return "", &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "the file has too many chunks for WeCom"}
	}
	sum := md5.Sum(data)
	init, err := bc.request(ctx, "aibot_upload_media_init", reqID("aibot_upload_media_init"), map[string]any{
		"type": typ, "filename": name, "total_size": len(data), "total_chunks": chunks, "md5": hex.EncodeToString(sum[:])})
	if err != nil {
		return "", err
	}
	var ans struct {
		UploadID string `json:"upload_id"`
		MediaID  string `json:"media_id"`
	}
	if err := jsonBodyOf(init, &ans); err != nil || ans.UploadID == "" {
		return "", &BotError{Op: "aibot_upload_media_init", Msg: "no upload_id"}
	}
	uploadID := ans.UploadID
	for i := range chunks {
		end := min((i+1)*botChunk, len(data))
		if _, err := bc.request(ctx, "aibot_upload_media_chunk", reqID("aibot_upload_media_chunk"), map[string]any{
			"upload_id": uploadID, "chunk_index": i, "base64_data": base64.StdEncoding.EncodeToString(data[i*botChunk : end])}); err != nil {
			return "", err
		}
	}
	fin, err := bc.request(ctx, "aibot_upload_media_finish", reqID("aibot_upload_media_finish"), map[string]any{"upload_id": uploadID})
	if err != nil {
		return "", err
	}
	ans.MediaID = ""
	if err := jsonBodyOf(fin, &ans); err != nil || ans.MediaID == "" {
		return "", &BotError{Op: "aibot_upload_media_finish", Msg: "no media_id"}
	}
	return ans.MediaID, nil
}

func jsonBodyOf(f frame, v any) error {
	if len(f.Body) == 0 {
		return errors.New("no body")
	}
	return json.Unmarshal(f.Body, v)
}

// BotLogin is the wecom_bot_binding form: an intelligent robot in API
// mode with the long connection.
type BotLogin struct {
	BotID  string `json:"bot_id" label:"Bot ID" input:"text" help:"WeCom admin console → Intelligent Robots (智能机器人) → your robot → API mode with long connection: Bot ID."`
	Secret string `json:"secret" label:"Secret" secret:"true" input:"password" help:"The robot's Secret, from the same page."`
}

// signInBot checks the robot's credentials with one subscription on a
// connection of its own, closed before the channel's consumer opens its
// own.
func (c *Connector) signInBot(ctx context.Context, _ *connector.Channel, in BotLogin) (connector.Account[binding], error) {
	b := binding{Mode: modeBot, BotID: strings.TrimSpace(in.BotID), Secret: strings.TrimSpace(in.Secret)}
	if b.BotID == "" || len(b.BotID) > 128 {
		return connector.Account[binding]{}, invalid("bot_id must be the robot's Bot ID")
	}
	if b.Secret == "" {
		return connector.Account[binding]{}, invalid("secret must not be empty")
	}
	if err := c.botCheck(ctx, b); err != nil {
		c.log.Info("wecom robot: sign-in refused", "err", err)
		var be *BotError
		if errors.As(err, &be) {
			return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
				"WeCom refused the robot's credentials (errcode %d: %s): check the Bot ID and Secret", be.Code, be.Msg)
		}
		return connector.Account[binding]{}, &protocol.Error{Code: connector.CodeTargetUnreachable, Retryable: true,
			Message: "the WeCom long connection cannot be reached (check the network, --wecom-ws-url and --proxy)"}
	}
	b.Name = "WeCom robot " + b.BotID
	return c.clients.With(account(b), &client{c: c, bin: b}), nil
}

// botCheck subscribes once and closes.
func (c *Connector) botCheck(ctx context.Context, b binding) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, c.wsURL, &websocket.DialOptions{HTTPClient: c.wsDial})
	if err != nil {
		return scrubURL(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxBotFrame)
	id := reqID("aibot_subscribe")
	var f frame
	f.Cmd, f.Headers.ReqID = "aibot_subscribe", id
	f.Body, _ = json.Marshal(map[string]string{"bot_id": b.BotID, "secret": b.Secret})
	out, _ := json.Marshal(f)
	if err := ws.Write(ctx, websocket.MessageText, out); err != nil {
		return err
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return err
		}
		var a frame
		if json.Unmarshal(data, &a) != nil || a.Headers.ReqID != id {
			continue
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
		if a.ErrCode != nil && *a.ErrCode != 0 {
			return &BotError{Op: "aibot_subscribe", Code: *a.ErrCode, Msg: a.ErrMsg}
		}
		return nil
	}
}
