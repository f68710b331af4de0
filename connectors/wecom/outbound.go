package wecom

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

// textLimit is how long one WeCom text may be: 2048 bytes for an
// application's text and markdown (longer is truncated by WeCom).
var textLimit = connector.TextLimit{Max: MaxTextBytes, Unit: connector.TextUnitBytes}

// ref is a posted message: an application's msgid, or a robot's stream
// id with the req_id it answers.
type ref struct {
	ID    string `json:"id"`
	ReqID string `json:"req_id,omitempty"`
	Bot   bool   `json:"bot,omitempty"`
	// Msg is the assistant message of a robot stream.
	Msg string `json:"msg,omitempty"`
}

// finalKey marks the context of a final (the SDK's Edit is not told
// which edit is the last, which a robot's stream must say with finish).
type finalKey struct{}

func isFinal(ctx context.Context) bool { v, _ := ctx.Value(finalKey{}).(bool); return v }

// final delivers an assistant message through the EditStream, marked as
// the final.
func (c *Connector) final(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
	if err := c.stream.Final(context.WithValue(ctx, finalKey{}, true), ch, m); err != nil {
		return err
	}
	c.finishBot(ctx, ch, m)
	return nil
}

// delta streams a robot's answer; an application cannot edit a message,
// so its deltas are dropped and the final is sent once.
func (c *Connector) delta(ctx context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
	b, err := c.clients.Binding(ch)
	if err != nil || b.Mode != modeBot {
		return nil
	}
	return c.stream.Delta(ctx, ch, d)
}

// target is where part goes: the reply context of the message it answers,
// else (or for a tool) the latest sender.
func (c *Connector) target(ctx context.Context, ch *connector.Channel, part connector.MessagePart) (recipient, error) {
	var r recipient
	ok, err := false, error(nil)
	if part.ToolCallID == "" && part.InReplyTo != "" {
		ok, err = ch.LoadReplyContext(ctx, part.InReplyTo, &r)
	}
	if err == nil && !ok {
		// An answer that does not say what it answers goes to the latest
		// message (a robot's under its req_id); a tool's post is proactive.
		ok, err = ch.LoadState(ctx, lastKey, &r)
		if part.ToolCallID != "" {
			r.ReqID = ""
		}
	}
	switch {
	case err != nil:
		return r, fmt.Errorf("wecom: load reply context: %w", err)
	case !ok || (r.User == "" && r.ChatID == ""):
		return r, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: errNoRecipient.Error()}
	}
	return r, nil
}

// streamSend sends one text part of an assistant message.
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (ref, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return ref{}, err
	}
	t, err := c.target(ctx, ch, part)
	if err != nil {
		return ref{}, err
	}
	if cl.bin.Mode == modeBot {
		return c.botSend(ctx, ch, cl, t, part, text)
	}
	id, err := c.api.send(ctx, cl.bin.cred(), cl.bin.AgentID, t.User, c.appMsgType, map[string]string{"content": text})
	return ref{ID: id}, err
}

// streamEdit edits a robot's streamed answer; an application's message
// cannot be edited.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, r ref, text string) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	if cl.bin.Mode != modeBot || !r.Bot {
		return fmt.Errorf("wecom: an application message: %w", connector.ErrNotEditable)
	}
	return c.botEdit(ctx, ch, cl, r, text, isFinal(ctx))
}

// streamFile uploads and sends one file: an image (at most 10 MB) as an
// image, anything else as a file (at most 20 MB).
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (ref, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return ref{}, err
	}
	t, err := c.target(ctx, ch, part)
	if err != nil {
		return ref{}, err
	}
	name := f.Filename
	if name == "" {
		name = "file"
	}
	typ := "file"
	if f.Type == protocol.FileImage && f.Size <= maxImageBytes && imageExt(name, f.MimeType) {
		typ = "image"
	}
	if f.Size > maxFileBytes {
		return ref{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: fmt.Sprintf("the file %q is larger than WeCom's 20 MB", name)}
	}
	open := func() (io.ReadCloser, error) { return f.Open() }
	if cl.bin.Mode == modeBot {
		return c.botSendFile(ctx, ch, cl, t, typ, name, f)
	}
	id, err := c.api.upload(ctx, cl.bin.cred(), typ, name, open)
	if err != nil {
		return ref{}, err
	}
	msgID, err := c.api.send(ctx, cl.bin.cred(), cl.bin.AgentID, t.User, typ, map[string]string{"media_id": id})
	return ref{ID: msgID}, err
}

// WeCom's upload limits (上传临时素材): images 10 MB (JPG, PNG), files
// 20 MB.
const (
	maxImageBytes = 10 << 20
	maxFileBytes  = 20 << 20
)

func imageExt(name, mimeType string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		return true
	}
	return mimeType == "image/jpeg" || mimeType == "image/png"
}

// deliveryError classifies a failed delivery: refused credentials make
// the channel expired; frequency limits, busy and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("wecom: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Op == "gettoken" && !ae.Temporary() && ae.Code != codeIPNotAllowed:
		if serr := ch.SetStatus(ctx, protocol.StatusExpired); serr != nil {
			c.log.Warn("wecom: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "WeCom no longer accepts the application's credentials: sign in again"}
	case errors.As(err, &ae) && ae.Code == codeIPNotAllowed:
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true,
			Message: "WeCom refused the connector's IP address (60020): add it to the application's trusted IPs"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("WeCom %s: errcode %d %s", ae.Op, ae.Code, ae.Msg)}
	case errors.Is(err, errBotOffline):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "the robot's long connection is down: try again"}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "WeCom unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "WeCom delivery failed"}
}

// SendInput is the input of wecom_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text to send to the channel's default WeCom user or chat (the latest that wrote to the application or robot)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (JPG and PNG images as images, anything else as a file)."`
}

// SendResult is the result of wecom_message_send.
type SendResult = connector.SendResult[ref]

func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
