package connectortest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The in-test connector: a "room" target with a form flow, a QR flow, one
// tool and IM v2 both ways. Only the public SDK API is used, as a connector
// author would.
const (
	roomCardID  = "im.kitroom"
	flowRoom    = "kitroom_login"
	flowQR      = "kitroom_qr"
	toolEcho    = "kitroom_echo"
	goodCode    = "open-sesame-42"
	loginPrefix = "https://kitroom.invalid/login?t="
)

type echoIn struct {
	Text string `json:"text" desc:"Text to echo."`
}

type echoOut struct {
	Echo    string `json:"echo"`
	Channel string `json:"channel"`
}

func roomCard() *protocol.Card {
	return &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           connector.BuildInfo(),
		ConnectorCardID: roomCardID,
		Connector:       protocol.CardInfo{Name: "Kit room", Version: "1.0.0", Vendor: "xconn", Description: "Connector of the connectortest tests"},
		Supports: protocol.Supports{
			UserChannelMode: protocol.UserChannelMultiple,
			TargetTypes:     []protocol.TargetType{protocol.TargetIM},
			Targets:         []protocol.Target{{TargetType: protocol.TargetIM, Provider: "kitroom", Label: "Kit room"}},
			Profiles:        []protocol.Profile{protocol.ProfileIMv2},
		},
		AuthFlows: []protocol.AuthFlow{
			{ID: flowRoom, TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm, Title: "Room",
				Fields: []protocol.AuthField{
					{Name: "room", Label: "Room", InputType: protocol.InputText, Required: true},
					{Name: "access_code", Label: "Access code", InputType: protocol.InputPassword, Required: true, Secret: true},
				}},
			{ID: flowQR, TargetType: protocol.TargetIM, Type: protocol.AuthFlowQRLogin, Title: "Scan"},
		},
		Security: &protocol.Security{TrustLevel: protocol.TrustLocal},
	}
}

type room struct {
	srv *connector.Server
	url string

	mu        sync.Mutex
	delivered []string // assistant messages the target received
	files     []string // the contents of their files
	streamed  []string // the assembled text of each delta
	activity  []protocol.ActivityStatus
}

// startRoom serves the in-test connector on a loopback httptest server,
// closed (with every goroutine) when the test ends.
func startRoom(t *testing.T, qrTTL time.Duration) *room {
	t.Helper()
	srv, err := connector.New(connector.Options{
		Card:    roomCard(),
		Skill:   []byte("---\nname: " + protocol.PrimarySkillName(roomCardID) + "\ndescription: Kit room.\n---\n\n# Kit room\n"),
		Store:   connectortest.NewStore(t),
		DataDir: t.TempDir(),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &room{srv: srv}
	errs := []error{
		connector.AddTool(srv, toolEcho, func(ctx context.Context, c *connector.Call, in echoIn) (echoOut, error) {
			return echoOut{Echo: in.Text, Channel: c.Channel.ID()}, nil
		}, connector.ToolOptions{Description: "Echo text back."}),
		srv.AddAuthFlow(flowRoom, connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
			if in.Secret("access_code") != goodCode {
				return connector.Binding{}, errors.New("wrong access code")
			}
			return connector.Binding{Data: []byte(in.Get("room")), DisplayName: in.Get("room")}, nil
		})),
		srv.AddAuthFlow(flowQR, connector.QR(connector.QRFlow{
			Issue: func(ctx context.Context, q *connector.QRSession) (string, error) {
				return loginPrefix + q.Token, nil
			},
			TTL: qrTTL,
		})),
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		var files []string
		for _, f := range m.Files {
			rc, err := f.Open()
			if err != nil {
				return err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return err
			}
			files = append(files, string(b))
		}
		r.mu.Lock()
		r.delivered = append(r.delivered, m.Text)
		r.files = append(r.files, files...)
		r.mu.Unlock()
		return nil
	})
	srv.OnAssistantDelta(func(ctx context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
		r.mu.Lock()
		r.streamed = append(r.streamed, d.Assembled)
		r.mu.Unlock()
		return nil
	})
	srv.OnActivity(func(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
		r.mu.Lock()
		r.activity = append(r.activity, a.Status)
		r.mu.Unlock()
		return nil
	})
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	r.url = hs.URL
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.CloseClientConnections()
		hs.Close()
	})
	return r
}

// confirmAs plays the user of the room's login page: it takes the token
// out of the QR text and completes the sign-in.
func (r *room) confirmAs(name string) func(ctx context.Context, qrText string) error {
	return func(ctx context.Context, qrText string) error {
		u, err := url.Parse(qrText)
		if err != nil {
			return err
		}
		return r.srv.AuthComplete(ctx, u.Query().Get("t"), connector.Binding{Data: []byte(name), DisplayName: name})
	}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, r *room) *connectortest.Client {
	t.Helper()
	c, ack, err := connectortest.Connect(ctxT(t), r.url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if ack.ConnectorCardID != roomCardID || ack.ConnectorID == "" {
		t.Fatalf("hello ack %+v", ack)
	}
	return c
}

func open(t *testing.T, c *connectortest.Client) string {
	t.Helper()
	ack, err := c.Open(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if ack.ConnectorChannelID == "" || ack.ConnectionDescriptor == nil {
		t.Fatalf("open ack %+v", ack)
	}
	return ack.ConnectorChannelID
}

func TestFormSignInAndInvoke(t *testing.T) {
	r := startRoom(t, 0)
	c := connect(t, r)
	ctx := ctxT(t)
	ch := open(t, c)

	// Before sign-in the tool is refused with the wire code.
	_, err := connectortest.Invoke[echoOut](ctx, c, ch, toolEcho, echoIn{Text: "x"})
	if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeConnectionNotAuthenticated {
		t.Fatalf("invoke before sign-in: %v", err)
	}

	// A wrong code ends the sign-in without authenticating it.
	st, err := c.SignInForm(ctx, ch, flowRoom, map[string]string{"room": "lobby", "access_code": "nope-nope"})
	var se *connectortest.SignInError
	if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed || st == nil || st.Status != protocol.AuthFailed {
		t.Fatalf("bad code: %v %+v", err, st)
	}
	// An unknown flow is a protocol error.
	if _, err := c.SignInForm(ctx, ch, "no_such_flow", nil); protocol.AsError(err) == nil {
		t.Fatalf("unknown flow: %v", err)
	}

	st, err = c.SignInForm(ctx, ch, flowRoom, map[string]string{"room": "lobby", "access_code": goodCode})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor == nil || st.ConnectionDescriptor.Target.DisplayName != "lobby" {
		t.Fatalf("sign-in state %+v", st)
	}

	out, err := connectortest.Invoke[echoOut](ctx, c, ch, toolEcho, echoIn{Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if out != (echoOut{Echo: "hello", Channel: ch}) {
		t.Fatalf("result %+v", out)
	}
	// Arguments as a map and as raw JSON; a schema violation is typed.
	if out, err := connectortest.Invoke[echoOut](ctx, c, ch, toolEcho, map[string]any{"text": "m"}); err != nil || out.Echo != "m" {
		t.Fatalf("map args: %+v %v", out, err)
	}
	if raw, err := c.InvokeRaw(ctx, ch, toolEcho, []byte(`{"text":"r"}`), ""); err == nil {
		t.Fatalf("[]byte args are not an object, got %s", raw)
	}
	_, err = connectortest.Invoke[echoOut](ctx, c, ch, toolEcho, map[string]any{"text": 3})
	if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeInvalidArguments {
		t.Fatalf("bad args: %v", err)
	}
	_, err = connectortest.Invoke[echoOut](ctx, c, ch, "no_such_tool", nil)
	if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeUnknownTool {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestQRSignIn(t *testing.T) {
	r := startRoom(t, 0)
	c := connect(t, r)
	ch := open(t, c)
	var seen []string
	confirm := r.confirmAs("Bob")
	st, err := c.SignInQR(ctxT(t), ch, flowQR, func(ctx context.Context, qr string) error {
		seen = append(seen, qr)
		return confirm(ctx, qr)
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != protocol.AuthAuthenticated || st.ConnectionDescriptor.Target.DisplayName != "Bob" {
		t.Fatalf("state %+v", st)
	}
	if len(seen) != 1 || len(seen[0]) <= len(loginPrefix) || seen[0][:len(loginPrefix)] != loginPrefix {
		t.Fatalf("confirm saw %q", seen)
	}
	if _, err := connectortest.Invoke[echoOut](ctxT(t), c, ch, toolEcho, echoIn{Text: "after qr"}); err != nil {
		t.Fatal(err)
	}
}

func TestQRSignInRefreshesAnExpiredCode(t *testing.T) {
	r := startRoom(t, 150*time.Millisecond)
	c := connect(t, r)
	ch := open(t, c)
	var seen []string
	confirm := r.confirmAs("Cy")
	st, err := c.SignInQR(ctxT(t), ch, flowQR, func(ctx context.Context, qr string) error {
		seen = append(seen, qr)
		if len(seen) == 1 {
			return nil // the user lets the first code expire
		}
		// A code lives 150 ms: on a loaded machine a later one may expire
		// before it is confirmed; then the next refreshed code is tried.
		if err := confirm(ctx, qr); err != nil && !strings.Contains(err.Error(), "expired") {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != protocol.AuthAuthenticated || len(seen) < 2 || seen[0] == seen[1] {
		t.Fatalf("state %+v, codes %q", st, seen)
	}
}

func TestQRSignInConfirmError(t *testing.T) {
	r := startRoom(t, 0)
	c := connect(t, r)
	ch := open(t, c)
	boom := errors.New("camera broken")
	_, err := c.SignInQR(ctxT(t), ch, flowQR, func(context.Context, string) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.SignInQR(ctxT(t), ch, flowQR, nil); err == nil {
		t.Fatal("nil confirm accepted")
	}
	// A sign-in that the target fails ends with a SignInError.
	_, err = c.SignInQR(ctxT(t), ch, flowQR, func(ctx context.Context, qr string) error {
		u, _ := url.Parse(qr)
		return r.srv.AuthFail(ctx, u.Query().Get("t"), "user declined")
	})
	var se *connectortest.SignInError
	if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed {
		t.Fatalf("failed sign-in: %v", err)
	}
}

func TestExpectAndAckPublishedMessage(t *testing.T) {
	r := startRoom(t, 0)
	ctx := ctxT(t)
	c, err := connectortest.Dial(ctx, r.url, "")
	if err != nil {
		t.Fatal(err)
	}
	hello := protocol.HelloPayload{ConnectorCardID: roomCardID, ProtocolVersion: protocol.ProtocolVersion,
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}}
	ha, err := c.Hello(ctx, hello)
	if err != nil {
		t.Fatal(err)
	}
	chA, chB := open(t, c), open(t, c)
	for _, ch := range []string{chA, chB} {
		if _, err := c.SignInForm(ctx, ch, flowRoom, map[string]string{"room": ch, "access_code": goodCode}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(ch, id, text string) {
		t.Helper()
		sch, err := r.srv.Channel(ch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sch.Publish(ctx, connector.UserMessage{MessageID: id, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	publish(chA, "a1", "to A")
	publish(chB, "b1", "to B")

	// Expecting B first leaves A's message queued.
	mb, err := c.ExpectMessage(ctx, chB, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ma, err := c.ExpectMessage(ctx, chA, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if mb.MessageID != "b1" || mb.Text != "to B" || mb.Channel != chB || ma.MessageID != "a1" || ma.Channel != chA || ma.PacketID == "" {
		t.Fatalf("messages %+v %+v", ma, mb)
	}
	// Nothing more arrives within a short timeout.
	if m, err := c.ExpectMessage(ctx, chA, 100*time.Millisecond); err == nil {
		t.Fatalf("unexpected message %+v", m)
	}
	if err := c.Ack(ctx, ma, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, mb, protocol.AckRejected); err == nil {
		t.Fatal("Ack took rejected")
	}
	// B stays unacknowledged. After a reconnection with the same
	// connector_id, the connector delivers B again and not A.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := connectortest.Dial(ctx, r.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	hello.ConnectorID = ha.ConnectorID
	if _, err := c2.Hello(ctx, hello); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{chA, chB} {
		if _, err := c2.Open(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	again, err := c2.ExpectMessage(ctx, "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if again.MessageID != "b1" || again.Channel != chB {
		t.Fatalf("redelivered %+v", again)
	}
	if err := c2.Ack(ctx, again, protocol.AckDuplicate); err != nil {
		t.Fatal(err)
	}
	if m, err := c2.ExpectMessage(ctx, "", 300*time.Millisecond); err == nil {
		t.Fatalf("acknowledged message delivered again: %+v", m)
	}

	// A non-retryable rejection gives the message up too.
	publish(chA, "a2", "rejected")
	m, err := c2.ExpectMessage(ctx, chA, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Reject(ctx, m, protocol.Code("message_too_large"), false, "too large"); err != nil {
		t.Fatal(err)
	}
	if m, err := c2.ExpectMessage(ctx, chA, 300*time.Millisecond); err == nil {
		t.Fatalf("rejected message delivered again: %+v", m)
	}
}

// Assistant replies go the other way: a host sends chat.message and the
// connector answers with an ack once the target has the message.
func TestSendAssistantMessage(t *testing.T) {
	r := startRoom(t, 0)
	c := connect(t, r)
	ctx := ctxT(t)
	ch := open(t, c)
	if _, err := c.SignInForm(ctx, ch, flowRoom, map[string]string{"room": "lobby", "access_code": goodCode}); err != nil {
		t.Fatal(err)
	}
	env, err := connectortest.Packet(protocol.TypeChatMessage, ch, protocol.ChatMessagePayload{MessageID: "as1", Text: "reply"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := c.RoundTrip(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	var p protocol.ChatAckPayload
	if err := ack.DecodePayload(&p); err != nil || p.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v %v", p, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.delivered) != 1 || r.delivered[0] != "reply" {
		t.Fatalf("target got %q", r.delivered)
	}
}

func TestConnectErrors(t *testing.T) {
	ctx := ctxT(t)
	if _, _, err := connectortest.Connect(ctx, "http://127.0.0.1:1", ""); err == nil {
		t.Fatal("connect to a closed port")
	}
	r := startRoom(t, 0)
	c, err := connectortest.Dial(ctx, r.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: "im.other", ProtocolVersion: protocol.ProtocolVersion,
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}})
	if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeConnectorCardIDMismatch {
		t.Fatalf("hello for another card: %v", err)
	}
	// The connector closes the socket: a waiting Next returns.
	if _, err := c.Next(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Next after close: %v", err)
	}
}
