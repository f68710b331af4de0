package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/qr"
	"github.com/xconn/xconn/protocol"
)

// signins tracks the sign-ins started through channel_sign_in, bounded:
// beyond max the oldest finished one is forgotten, and a new one is
// refused while max are running.
type signins struct {
	mu    sync.Mutex
	max   int
	order []string
	byID  map[string]*host.Signin
}

func newSignins(max int) *signins { return &signins{max: max, byID: map[string]*host.Signin{}} }

func (ss *signins) add(s *host.Signin) (string, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.order) >= ss.max {
		dropped := false
		for i, id := range ss.order {
			if ss.byID[id].State().Done {
				delete(ss.byID, id)
				ss.order = append(ss.order[:i], ss.order[i+1:]...)
				dropped = true
				break
			}
		}
		if !dropped {
			return "", false
		}
	}
	var b [9]byte
	_, _ = rand.Read(b[:])
	id := "signin_" + hex.EncodeToString(b[:])
	ss.byID[id] = s
	ss.order = append(ss.order, id)
	return id, true
}

func (ss *signins) get(id string) (*host.Signin, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[id]
	return s, ok
}

func (s *Server) addSigninTools() {
	s.srv.AddTool(&sdk.Tool{Name: ToolSignIn, Title: "Sign a channel in",
		Description: "Starts signing a channel in to a connector. A QR flow returns the QR code as an image (and its text, a URL) for the user to scan; poll channel_sign_in_status until it is authenticated. A form flow takes its fields in input (see the connector's auth flows in the result of a call without input).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"connector_card_id":{"type":"string","description":"the connector (may be left out when one is admitted)"},` +
			`"flow_id":{"type":"string","description":"the auth flow (default: the connector's first)"},` +
			`"input":{"type":"object","additionalProperties":{"type":"string"},"description":"form fields of a form flow"},` +
			`"connector_channel_id":{"type":"string","description":"sign this existing channel in again instead of a new one"}},` +
			`"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false)},
	}, s.signIn)
	s.srv.AddTool(&sdk.Tool{Name: ToolSignInStatus, Title: "Sign-in status",
		Description: "The state of a sign-in started with channel_sign_in: pending, scanned, authenticated (with the channel), expired, failed... A new QR code comes back as an image.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"sign_in_id":{"type":"string"},` +
			`"wait_seconds":{"type":"number","minimum":0,"maximum":30,"description":"wait up to this long for a change (default 0)"},` +
			`"refresh":{"type":"boolean","description":"ask for a new QR code"},` +
			`"cancel":{"type":"boolean","description":"cancel the sign-in"}},` +
			`"required":["sign_in_id"],"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.signInStatus)
	s.srv.AddTool(&sdk.Tool{Name: ToolSignOut, Title: "Sign a channel out",
		Description: "Signs a channel out of its target system (the channel stays listed, signed out; channel_sign_in with its connector_channel_id signs it in again).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"connector_channel_id":{"type":"string"}},"required":["connector_channel_id"],"additionalProperties":false}`),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true},
	}, s.signOut)
}

// signinView is what the sign-in tools return (never form input).
type signinView struct {
	SignInID    string       `json:"sign_in_id"`
	CardID      string       `json:"connector_card_id"`
	FlowID      string       `json:"flow_id,omitempty"`
	Status      string       `json:"status"`
	Message     string       `json:"message,omitempty"`
	QRCodeText  string       `json:"qr_code_text,omitempty"`
	ExpiresAt   *time.Time   `json:"expires_at,omitempty"`
	Channel     *channelInfo `json:"channel,omitempty"`
	Error       string       `json:"error,omitempty"`
	Done        bool         `json:"done"`
	NextStepTip string       `json:"next,omitempty"`
}

type flowView struct {
	ID     string      `json:"flow_id"`
	Type   string      `json:"type"`
	Title  string      `json:"title,omitempty"`
	Fields []fieldView `json:"fields,omitempty"`
}

type fieldView struct {
	Name     string `json:"name"`
	Label    string `json:"label,omitempty"`
	Required bool   `json:"required,omitempty"`
	Secret   bool   `json:"secret,omitempty"`
}

func (s *Server) signIn(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	var in struct {
		CardID    string            `json:"connector_card_id"`
		FlowID    string            `json:"flow_id"`
		Input     map[string]string `json:"input"`
		ChannelID string            `json:"connector_channel_id"`
	}
	b, _ := json.Marshal(args)
	if err := json.Unmarshal(b, &in); err != nil {
		return toolError(protocol.CodeInvalidArguments, "connector_card_id, flow_id and connector_channel_id must be strings, input an object of strings"), nil
	}
	cardID := in.CardID
	if cardID == "" {
		cs := s.h.Connectors()
		if len(cs) != 1 {
			ids := make([]string, len(cs))
			for i, c := range cs {
				ids[i] = c.CardID
			}
			return toolError(protocol.CodeInvalidArguments, fmt.Sprintf("connector_card_id: is required: one of %s", strings.Join(ids, ", "))), nil
		}
		cardID = cs[0].CardID
	}
	c, ok := s.h.Connector(cardID)
	if !ok || c.Card == nil {
		return toolError(protocol.CodeConnectionNotFound, fmt.Sprintf("connector_card_id %q is not admitted here", cardID)), nil
	}
	flowID := in.FlowID
	if flowID == "" && len(c.Card.AuthFlows) > 0 {
		flowID = c.Card.AuthFlows[0].ID
	}
	flow, ok := c.Card.AuthFlow(flowID)
	if !ok {
		return toolError(protocol.CodeAuthFlowNotFound, fmt.Sprintf("flow_id %q: the connector's flows are %s", flowID, flowsJSON(c.Card))), nil
	}
	if flow.Type == protocol.AuthFlowForm {
		var missing []string
		for _, f := range flow.Fields {
			if f.Required && in.Input[f.Name] == "" {
				missing = append(missing, f.Name)
			}
		}
		if len(missing) > 0 {
			return toolError(protocol.CodeInvalidAuthInput, fmt.Sprintf("input: missing %s; the connector's flows are %s", strings.Join(missing, ", "), flowsJSON(c.Card))), nil
		}
	}
	var si *host.Signin
	var err error
	if in.ChannelID != "" {
		ucs, lerr := s.h.Channels(ctx, s.opts.UserID, cardID)
		if lerr != nil {
			return invokeError(lerr), nil
		}
		ucID := ""
		for _, uc := range ucs {
			if uc.ChannelID == in.ChannelID || uc.ID == in.ChannelID {
				ucID = uc.ID
			}
		}
		if ucID == "" {
			return toolError(protocol.CodeConnectionNotFound, fmt.Sprintf("connector_channel_id %q is not a channel of %s here", in.ChannelID, cardID)), nil
		}
		si, err = s.h.Reauthenticate(ctx, ucID, flowID, in.Input)
	} else {
		si, err = s.h.Connect(ctx, s.opts.UserID, cardID, flowID, in.Input)
	}
	if err != nil {
		return invokeError(err), nil
	}
	// The host applies the auth.start.ack on its goroutine and polls
	// auth.status: give a QR code a moment to be recorded, and a form
	// flow a moment to end, so that the first answer says the most.
	for i := 0; i < 150; i++ {
		st := si.State()
		if st.Done || (flow.Type != protocol.AuthFlowForm && (st.QRCodeText != "" || st.QRCodeImage != "")) {
			break
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-si.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	id, ok := s.signins.add(si)
	if !ok {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = si.Cancel(cctx)
		cancel()
		return toolError(protocol.CodeCapacityExceeded, fmt.Sprintf("%d sign-ins are running: finish or cancel one first", s.opts.MaxSignins)), nil
	}
	return s.signinResult(ctx, id, cardID, si.State()), nil
}

func flowsJSON(card *protocol.Card) string {
	fl := make([]flowView, 0, len(card.AuthFlows))
	for _, f := range card.AuthFlows {
		v := flowView{ID: f.ID, Type: f.Type, Title: f.Title}
		for _, fd := range f.Fields {
			v.Fields = append(v.Fields, fieldView{Name: fd.Name, Label: fd.Label, Required: fd.Required, Secret: fd.IsSecret()})
		}
		fl = append(fl, v)
	}
	b, _ := json.Marshal(fl)
	return string(b)
}

func (s *Server) signinResult(ctx context.Context, id, cardID string, st host.SigninState) *sdk.CallToolResult {
	v := signinView{SignInID: id, CardID: cardID, FlowID: st.FlowID, Status: string(st.Status), Message: st.Message,
		QRCodeText: st.QRCodeText, Done: st.Done}
	if !st.ExpiresAt.IsZero() {
		t := st.ExpiresAt.UTC()
		v.ExpiresAt = &t
	}
	if st.Err != nil {
		v.Error = invokeErrorText(st.Err)
	}
	if st.UserChannel != nil {
		ci := s.info(*st.UserChannel, nil)
		v.Channel = &ci
	}
	switch {
	case st.Done && st.Status == protocol.AuthAuthenticated:
		v.NextStepTip = "signed in: its tools are listed now; read messages with messages_read"
		s.Changed()
	case !st.Done && st.QRCodeText != "":
		v.NextStepTip = "show the QR code to the user to scan, then call channel_sign_in_status with wait_seconds"
	case !st.Done:
		v.NextStepTip = "call channel_sign_in_status with wait_seconds"
	}
	b, _ := json.Marshal(v)
	r := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b),
		IsError: st.Done && st.Status != protocol.AuthAuthenticated}
	if !st.Done && (st.QRCodeImage != "" || st.QRCodeText != "") {
		if png, ok := qrPNG(st); ok {
			r.Content = append(r.Content, &sdk.ImageContent{MIMEType: "image/png", Data: png})
		}
	}
	return r
}

// qrPNG returns the PNG of a sign-in's QR code: the connector's image when
// it sent a PNG data URL, else one rendered from the QR text.
func qrPNG(st host.SigninState) ([]byte, bool) {
	const prefix = "data:image/png;base64,"
	if rest, ok := strings.CutPrefix(st.QRCodeImage, prefix); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil && len(b) > 0 {
			return b, true
		}
	}
	if st.QRCodeText == "" {
		return nil, false
	}
	u, err := qr.PNGDataURL(st.QRCodeText, qr.DefaultSize)
	if err != nil {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(u, prefix))
	return b, err == nil
}

func invokeErrorText(err error) string {
	if pe := protocol.AsError(err); pe != nil {
		return string(pe.Code) + ": " + pe.Message
	}
	return strings.TrimPrefix(err.Error(), "host: ")
}

func (s *Server) signInStatus(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	var in struct {
		ID      string   `json:"sign_in_id"`
		Wait    *float64 `json:"wait_seconds"`
		Refresh bool     `json:"refresh"`
		Cancel  bool     `json:"cancel"`
	}
	b, _ := json.Marshal(args)
	if err := json.Unmarshal(b, &in); err != nil {
		return toolError(protocol.CodeInvalidArguments, "sign_in_id must be a string, wait_seconds a number, refresh and cancel booleans"), nil
	}
	si, ok := s.signins.get(in.ID)
	if !ok {
		return toolError(protocol.CodeAuthSessionNotFound, fmt.Sprintf("sign_in_id %q: no such sign-in (start one with channel_sign_in)", in.ID)), nil
	}
	st := si.State()
	cardID := ""
	if st.UserChannel != nil {
		cardID = st.UserChannel.CardID
	}
	switch {
	case in.Cancel:
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = si.Cancel(cctx)
		cancel()
	case in.Refresh && !st.Done:
		if err := si.Refresh(ctx); err != nil {
			return invokeError(err), nil
		}
	case in.Wait != nil && *in.Wait > 0 && !st.Done:
		wait := min(time.Duration(*in.Wait*float64(time.Second)), s.opts.MaxReadWait)
		s.waitChange(ctx, si, st, wait)
	}
	return s.signinResult(ctx, in.ID, cardID, si.State()), nil
}

// waitChange waits until the sign-in's status, message or QR code
// changes, it ends, or wait passes.
func (s *Server) waitChange(ctx context.Context, si *host.Signin, was host.SigninState, wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-si.Done():
			return
		case <-tick.C:
			st := si.State()
			if st.Status != was.Status || st.Message != was.Message || st.QRCodeText != was.QRCodeText {
				return
			}
		}
	}
}

func (s *Server) signOut(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, bad := s.callArgs(req)
	if bad != nil {
		return bad, nil
	}
	chID, err := stringArg(args, argChannelID)
	if err != nil || chID == "" {
		return toolError(protocol.CodeInvalidArguments, "connector_channel_id: is required"), nil
	}
	ucs, err := s.h.Channels(ctx, s.opts.UserID, "")
	if err != nil {
		return invokeError(err), nil
	}
	for _, uc := range ucs {
		if uc.ChannelID != chID && uc.ID != chID {
			continue
		}
		if uc.Authenticated {
			if err := s.h.Logout(ctx, uc.ID); err != nil {
				return invokeError(err), nil
			}
		}
		s.Changed()
		b, _ := json.Marshal(map[string]any{"status": "signed_out", "connector_channel_id": uc.ChannelID, "connector_card_id": uc.CardID})
		return s.result(b, nil), nil
	}
	return toolError(protocol.CodeConnectionNotFound, fmt.Sprintf("connector_channel_id %q is not a channel here: see connector_channels_list", chID)), nil
}
