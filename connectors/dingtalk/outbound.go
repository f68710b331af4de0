package dingtalk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// textLimit is how long one DingTalk message may be.
var textLimit = connector.TextLimit{Max: MaxTextRunes, Unit: connector.TextUnitRunes}

// References of sent messages, recorded by the EditStream: a card is
// "card:" + its outTrackId (editable), anything else "msg:" + the
// processQueryKey ("" for a session webhook message).
const (
	refCard = "card:"
	refMsg  = "msg:"
)

// webhookMargin is how long before its sessionWebhookExpiredTime a
// session webhook is no longer used.
const webhookMargin = time.Minute

// target is where a message goes.
type target struct {
	replyContext
	// tool is set for a tool's post: never through a session webhook
	// (it answers no message).
	tool bool
}

// replyTarget is where the answer to user message inReplyTo goes: its
// reply context, else the latest inbound message, else the default chat.
func (c *Connector) replyTarget(ctx context.Context, ch *connector.Channel, inReplyTo string) (target, error) {
	var rc replyContext
	ok, err := ch.LoadReplyContext(ctx, inReplyTo, &rc)
	if err == nil && !ok {
		ok, err = ch.LoadState(ctx, lastKey, &rc)
	}
	switch {
	case err != nil:
		return target{}, fmt.Errorf("dingtalk: load reply context: %w", err)
	case ok && rc.ConversationID != "" && (rc.group() || rc.StaffID != ""):
		return target{replyContext: rc}, nil
	}
	return c.defaultTarget(ctx, ch)
}

// partTarget is where one call of a message goes: a tool's post to the
// default chat, an answer where the message it answers was written.
func (c *Connector) partTarget(ctx context.Context, ch *connector.Channel, part connector.MessagePart) (target, error) {
	// A tool's post carries the call's tool_call_id when xAgent gave one;
	// its message id is "tool:..." either way (connector.Post).
	if part.ToolCallID != "" || strings.HasPrefix(part.MessageID, "tool:") {
		t, err := c.defaultTarget(ctx, ch)
		t.tool = true
		return t, err
	}
	return c.replyTarget(ctx, ch, part.InReplyTo)
}

func (c *Connector) defaultTarget(ctx context.Context, ch *connector.Channel) (target, error) {
	var dc defaultChat
	ok, err := ch.LoadState(ctx, chatKey, &dc)
	if err != nil {
		return target{}, fmt.Errorf("dingtalk: load default chat: %w", err)
	}
	if !ok || dc.StaffID == "" {
		return target{}, &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: "no DingTalk conversation yet: the user must message the robot directly once"}
	}
	return target{replyContext: replyContext{ConversationID: dc.ConversationID, ConversationType: "1", StaffID: dc.StaffID}, tool: true}, nil
}

// clientFor returns the channel's client and where part goes.
func (c *Connector) clientFor(ctx context.Context, ch *connector.Channel, part connector.MessagePart) (*appClient, target, error) {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return nil, target{}, err
	}
	t, err := c.partTarget(ctx, ch, part)
	return cl, t, err
}

// streamSend sends one text part of an assistant message: the first
// delta of a stream as an AI card (with a template), anything else as a
// message (§6.1, §6.2).
func (c *Connector) streamSend(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (string, error) {
	cl, t, err := c.clientFor(ctx, ch, part)
	if err != nil {
		return "", err
	}
	if c.cardTemplate != "" && !isFinal(ctx) && !t.tool && part.Index == 0 {
		return cl.sendCard(ctx, t, part.Key, text)
	}
	return cl.sendText(ctx, t, text)
}

// streamEdit updates a streamed card (§6.5); the update of a final
// finalizes it. A message that is not a card cannot be edited, nor a
// card DingTalk refuses to update: the SDK then sends the final anew.
func (c *Connector) streamEdit(ctx context.Context, ch *connector.Channel, ref, text string) error {
	id, ok := strings.CutPrefix(ref, refCard)
	if !ok {
		return fmt.Errorf("%w: a DingTalk robot message", connector.ErrNotEditable)
	}
	cl, err := c.clients.Get(ch)
	if err != nil {
		return err
	}
	err = c.api.call(ctx, cl.cr, "card streaming", http.MethodPut, "/v1.0/card/streaming", map[string]any{
		"outTrackId": id, "guid": newGUID(), "key": c.cardKey, "content": text,
		"isFull": true, "isFinalize": isFinal(ctx), "isError": false}, nil)
	var ae *APIError
	if errors.As(err, &ae) && !ae.Temporary() && !ae.tokenInvalid() {
		return fmt.Errorf("%w: %w", connector.ErrNotEditable, err)
	}
	return err
}

// streamFile sends one file of a final where the message it answers was
// written (or a tool's to the default chat).
func (c *Connector) streamFile(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (string, error) {
	cl, t, err := c.clientFor(ctx, ch, part)
	if err != nil {
		return "", err
	}
	return cl.sendFile(ctx, t, f)
}

func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// title is a markdown message's title (shown in notifications): the
// first line, at most 20 characters.
func title(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimLeft(line, "#>*-` ")
	if utf8.RuneCountInString(line) > 20 {
		line = string([]rune(line)[:20]) + "…"
	}
	if line == "" {
		return "Reply"
	}
	return line
}

// sendText sends text as markdown: through the session webhook of the
// message it answers while valid, else the robot API (§6.1, §6.2).
func (cl *appClient) sendText(ctx context.Context, t target, text string) (string, error) {
	if !t.tool && t.SessionWebhook != "" && time.Now().Add(webhookMargin).Before(time.UnixMilli(t.SessionExpires)) &&
		cl.c.validWebhook(t.SessionWebhook) {
		err := cl.c.api.sessionSend(ctx, t.SessionWebhook, map[string]any{"msgtype": "markdown",
			"markdown": map[string]string{"title": title(text), "text": text}})
		if err == nil {
			return refMsg, nil
		}
		var ae *APIError
		if !errors.As(err, &ae) || ae.Temporary() {
			return "", err
		}
		// An expired or refused session: the robot API reaches the same
		// conversation.
		cl.c.log.Info("dingtalk: session webhook refused; using the robot API", "err", err)
	}
	param, _ := json.Marshal(map[string]string{"title": title(text), "text": text})
	return cl.robotSend(ctx, t, "sampleMarkdown", string(param))
}

// robotSend sends one message with the robot API: groupMessages/send to
// a group, oToMessages/batchSend to a 1:1 receiver (§6.2).
func (cl *appClient) robotSend(ctx context.Context, t target, key, param string) (string, error) {
	var out struct {
		ProcessQueryKey           string   `json:"processQueryKey"`
		InvalidStaffIDList        []string `json:"invalidStaffIdList"`
		FlowControlledStaffIDList []string `json:"flowControlledStaffIdList"`
	}
	if t.group() {
		err := cl.c.api.call(ctx, cl.cr, "group send", http.MethodPost, "/v1.0/robot/groupMessages/send", map[string]string{
			"robotCode": cl.cr.RobotCode, "openConversationId": t.ConversationID, "msgKey": key, "msgParam": param}, &out)
		return refMsg + out.ProcessQueryKey, err
	}
	err := cl.c.api.call(ctx, cl.cr, "1:1 send", http.MethodPost, "/v1.0/robot/oToMessages/batchSend", map[string]any{
		"robotCode": cl.cr.RobotCode, "userIds": []string{t.StaffID}, "msgKey": key, "msgParam": param}, &out)
	switch {
	case err != nil:
		return "", err
	case len(out.FlowControlledStaffIDList) > 0:
		return "", &connector.RateLimitError{Err: &APIError{Op: "1:1 send", Status: http.StatusOK, Code: "flowControlled", Msg: "the receiver is flow-controlled"}}
	case len(out.InvalidStaffIDList) > 0:
		return "", &APIError{Op: "1:1 send", Status: http.StatusOK, Code: "invalidStaffId", Msg: "the receiver is not a member the robot can reach"}
	}
	return refMsg + out.ProcessQueryKey, nil
}

// sendCard creates and delivers an AI card holding text (§6.5); key, the
// part's idempotency key, is its outTrackId, so that a repeated create
// after a crash finds the card already there.
func (cl *appClient) sendCard(ctx context.Context, t target, key, text string) (string, error) {
	body := map[string]any{
		"cardTemplateId": cl.c.cardTemplate, "outTrackId": key, "callbackType": "STREAM",
		"cardData": map[string]any{"cardParamMap": map[string]string{cl.c.cardKey: text}},
	}
	if t.group() {
		body["openSpaceId"] = "dtv1.card//IM_GROUP." + t.ConversationID
		body["imGroupOpenSpaceModel"] = map[string]any{"supportForward": true}
		body["imGroupOpenDeliverModel"] = map[string]any{"robotCode": cl.cr.RobotCode}
	} else {
		body["openSpaceId"] = "dtv1.card//IM_ROBOT." + t.StaffID
		body["imRobotOpenSpaceModel"] = map[string]any{"supportForward": true}
		body["imRobotOpenDeliverModel"] = map[string]any{"spaceType": "IM_ROBOT"}
	}
	var out struct {
		Success bool `json:"success"`
		Result  struct {
			DeliverResults []struct {
				Success  bool   `json:"success"`
				ErrorMsg string `json:"errorMsg"`
			} `json:"deliverResults"`
		} `json:"result"`
	}
	err := cl.c.api.call(ctx, cl.cr, "card create", http.MethodPost, "/v1.0/card/instances/createAndDeliver", body, &out)
	var ae *APIError
	if errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.Code), "outtrackid") {
		return refCard + key, nil // created before a crash: stream on into it
	}
	if err != nil {
		return "", err
	}
	for _, r := range out.Result.DeliverResults {
		if !r.Success {
			return "", &APIError{Op: "card create", Status: http.StatusOK, Code: "deliverFailed", Msg: r.ErrorMsg}
		}
	}
	return refCard + key, nil
}

// sendFile uploads f (§6.4) and sends it with the robot API: an image
// as an image message, anything else as a file message.
func (cl *appClient) sendFile(ctx context.Context, t target, f *connector.File) (string, error) {
	open := func() (io.ReadCloser, error) { return f.Open() }
	name := f.Filename
	if name == "" {
		name = "file"
	}
	if f.Type == protocol.FileImage && f.Size <= 20<<20 {
		id, err := cl.c.api.upload(ctx, cl.cr, "image", name, open)
		if err != nil {
			return "", err
		}
		param, _ := json.Marshal(map[string]string{"photoURL": id})
		return cl.robotSend(ctx, t, "sampleImageMsg", string(param))
	}
	id, err := cl.c.api.upload(ctx, cl.cr, "file", name, open)
	if err != nil {
		return "", err
	}
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(name)), ".")
	if ext == "" {
		ext = "file"
	}
	param, _ := json.Marshal(map[string]string{"mediaId": id, "fileName": name, "fileType": ext})
	return cl.robotSend(ctx, t, "sampleFile", string(param))
}

// deliveryError classifies a failed delivery: refused credentials make
// the channel expired; rate limits, 5xx and network failures are
// retryable; other refusals are not. Messages are secret-free.
func (c *Connector) deliveryError(ctx context.Context, ch *connector.Channel, err error) error {
	c.log.Warn("dingtalk: delivery failed", "channel", ch.ID(), "err", err)
	if perr := protocol.AsError(err); perr != nil {
		return perr
	}
	var ae *APIError
	var rl *connector.RateLimitError
	switch {
	case errors.As(err, &ae) && ae.Op == "access token" && refused(err):
		if serr := ch.SetStatus(ctx, protocol.StatusExpired); serr != nil {
			c.log.Warn("dingtalk: set status", "channel", ch.ID(), "err", serr)
		}
		return &protocol.Error{Code: protocol.CodeConnectionNotAuthenticated,
			Message: "DingTalk no longer accepts the app's credentials: sign in again"}
	case errors.As(err, &rl):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "DingTalk rate limit: try again later"}
	case errors.As(err, &ae):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: ae.Temporary(),
			Message: fmt.Sprintf("DingTalk %s: HTTP %d %s", ae.Op, ae.Status, cmpCode(ae))}
	case isTemporary(err):
		return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Retryable: true, Message: "DingTalk Open Platform unreachable"}
	}
	return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "DingTalk delivery failed"}
}

func cmpCode(ae *APIError) string {
	if ae.Code != "" {
		return ae.Code
	}
	return fmt.Sprintf("errcode %d", ae.ErrCode)
}

// SendInput is the input of dingtalk_message_send.
type SendInput struct {
	Text string            `json:"text" desc:"Text (Markdown) to send to the channel's default DingTalk conversation (the latest 1:1 chat with the robot)."`
	File *connector.Upload `json:"file,omitempty" desc:"Optional file to send after the text: an upload reference (images as images, anything else as a file)."`
}

// SendResult is the result of dingtalk_message_send: references of the
// text parts, then of the file.
type SendResult = connector.SendResult[string]

// sendArgs reads the send tool's text and file.
func sendArgs(in SendInput) (string, *connector.Upload) { return in.Text, in.File }
