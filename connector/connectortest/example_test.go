package connectortest_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// A connector's test, end to end over a real WebSocket: connect as a host,
// open a channel, sign in with a form, call a tool, then receive a message
// the target published and acknowledge it.
func Example() {
	ctx := context.Background()
	srv, url, done := startExample()
	defer done()

	// The host's side, through the kit.
	c, _, err := connectortest.Connect(ctx, url, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	open, err := c.Open(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	ch := open.ConnectorChannelID
	st, err := c.SignInForm(ctx, ch, "example_login", map[string]string{"user": "ann"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sign-in:", st.Status, st.ConnectionDescriptor.Target.DisplayName)

	out, err := connectortest.Invoke[map[string]string](ctx, c, ch, "example_echo", map[string]string{"text": "hi"})
	fmt.Println("tool:", out["echo"], err)

	_, err = connectortest.Invoke[map[string]string](ctx, c, ch, "example_nope", nil)
	fmt.Println("refused:", protocol.AsError(err).Code)

	// The target says something; the host receives and accepts it.
	sch, _ := srv.Channel(ch)
	_, _ = sch.Publish(ctx, connector.UserMessage{MessageID: "t-1", Text: "hello from the target"})
	m, err := c.ExpectMessage(ctx, ch, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("message:", m.MessageID, m.Text)
	fmt.Println("ack:", c.Ack(ctx, m, protocol.AckAccepted))
	// Output:
	// sign-in: authenticated ann
	// tool: hi <nil>
	// refused: unknown_tool
	// message: t-1 hello from the target
	// ack: <nil>
}

// An agent's answer as a host sends it: a file uploaded through the
// transfer plane, deltas, then the final naming the file; the connector
// acks the final accepted once the target has it, and a repeat duplicate.
func ExampleClient_SendStream() {
	ctx := context.Background()
	_, url, done := startExample()
	defer done()
	c, _, err := connectortest.Connect(ctx, url, "")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ch, _, err := c.OpenAndSignIn(ctx, "example_login", map[string]string{"user": "ann"})
	if err != nil {
		log.Fatal(err)
	}
	up, err := c.Upload(ctx, ch, "notes.txt", "text/plain", []byte("some notes"))
	if err != nil {
		log.Fatal(err)
	}
	answer := protocol.ChatMessagePayload{MessageID: "m-1", Text: "Hello, Ann",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: up.FileRef}}}
	ack, err := c.SendStream(ctx, ch, answer, "Hello", ", Ann")
	fmt.Println("ack:", ack.Status, err)
	ack, err = c.SendFinal(ctx, ch, answer)
	fmt.Println("again:", ack.Status, err)
	// Output:
	// target shows: Hello
	// target shows: Hello, Ann
	// target posts: Hello, Ann (+ notes.txt: some notes)
	// ack: accepted <nil>
	// again: duplicate <nil>
}

// startExample serves the examples' connector (normally the connector's
// own constructor) on a loopback server, with a store in a temporary
// directory (in a test: connectortest.NewStore(t) and t.TempDir()). Its
// target prints what it shows. done closes everything.
func startExample() (srv *connector.Server, url string, done func()) {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "connectortest-example-")
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "xconn.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	srv, err = connector.New(connector.Options{Card: &protocol.Card{
		Schema: protocol.CardSchema, ProtocolVersion: protocol.ProtocolVersion, Build: connector.BuildInfo(),
		ConnectorCardID: "im.example",
		Connector:       protocol.CardInfo{Name: "Example", Version: "1.0.0"},
		Supports: protocol.Supports{UserChannelMode: protocol.UserChannelMultiple,
			TargetTypes: []protocol.TargetType{protocol.TargetIM},
			Targets:     []protocol.Target{{TargetType: protocol.TargetIM, Provider: "example", Label: "Example"}},
			Profiles:    []protocol.Profile{protocol.ProfileIMv2}},
		AuthFlows: []protocol.AuthFlow{{ID: "example_login", TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm,
			Title: "Sign in", Fields: []protocol.AuthField{{Name: "user", Label: "User", InputType: protocol.InputText, Required: true}}}},
	}, Store: db, DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	_ = connector.AddTool(srv, "example_echo", func(ctx context.Context, c *connector.Call, in struct {
		Text string `json:"text"`
	}) (map[string]string, error) {
		return map[string]string{"echo": in.Text}, nil
	}, connector.ToolOptions{Description: "Echo text back."})
	_ = srv.AddAuthFlow("example_login", connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
		return connector.Binding{Data: []byte(in.Get("user")), DisplayName: in.Get("user")}, nil
	}))
	srv.OnAssistantDelta(func(_ context.Context, _ *connector.Channel, d *connector.AssistantDelta) error {
		fmt.Println("target shows:", d.Assembled)
		return nil
	})
	srv.OnAssistantMessage(func(_ context.Context, _ *connector.Channel, m *connector.AssistantMessage) error {
		line := m.Text
		for _, f := range m.Files {
			rc, err := f.Open()
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			line += fmt.Sprintf(" (+ %s: %s)", f.Filename, b)
		}
		fmt.Println("target posts:", line)
		return nil
	})
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	return srv, hs.URL, func() {
		hs.Close()
		_ = srv.Close(ctx)
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
}
