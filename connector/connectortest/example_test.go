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
// the target published and acknowledge it. In a test, use
// connectortest.NewStore(t) and t.TempDir() instead of the temporary
// directory.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "connectortest-example-")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "xconn.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// The connector under test (normally the connector's own constructor).
	srv, err := connector.New(connector.Options{Card: &protocol.Card{
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
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close(ctx)

	// The host's side, through the kit.
	c, _, err := connectortest.Connect(ctx, hs.URL, "")
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
