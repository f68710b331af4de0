package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// botLogin is a typed form: a token, a chat id that is a number, and an
// optional label.
type botLogin struct {
	Token  string `json:"token" label:"Bot token" secret:"true" help:"From the bot's settings."`
	ChatID int64  `json:"chat_id" label:"Chat" placeholder:"12345"`
	Label  string `json:"label,omitempty" label:"Label" default:"main"`
}

type botBinding struct {
	Token  string `json:"token" secret:"true"`
	ChatID int64  `json:"chat_id"`
}

// botClient is the per-channel client of the typed test connector.
type botClient struct {
	b      botBinding
	closed atomic.Bool
}

func (c *botClient) Close() error { c.closed.Store(true); return nil }

// botTarget is the fake target: the tokens it accepts, the clients it made
// and the consumer loops running per token.
type botTarget struct {
	mu       sync.Mutex
	accept   map[string]bool
	expired  map[string]bool
	clients  []*botClient
	running  map[string]int
	starts   int
	members  map[string]*connector.Members[botBinding]
	block    chan struct{} // when non-nil, client construction waits for it
	sentText []string
	// handle is what SetClient returned; reasons are the ClientReasons
	// the constructor was called with.
	handle  *connector.Clients[botBinding, *botClient]
	reasons []connector.ClientReason
}

func newBotTarget() *botTarget {
	return &botTarget{accept: map[string]bool{"tok-good-1": true, "tok-good-2": true}, expired: map[string]bool{},
		running: map[string]int{}, members: map[string]*connector.Members[botBinding]{}}
}

func (bt *botTarget) runningFor(tok string) int {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	return bt.running[tok]
}

const typedKey = "typed-test-key-0123456789"

// startBot starts the typed test connector on st and returns its base URL.
func startBot(t *testing.T, st store.ConnectorStore, bt *botTarget) (*connector.Server, string) {
	t.Helper()
	srv, err := connector.New(connector.Options{Store: st, APIKey: typedKey, DataDir: t.TempDir(),
		Skill: []byte("# Bot\n\nTalk to the bot.\n"),
		Identity: connector.Identity{CardID: "im.bot", Name: "Bot", Provider: "bot", TargetType: protocol.TargetIM,
			Description: "A fake bot."}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(connector.AddForm(srv, "bot_login", func(ctx context.Context, ch *connector.Channel, in botLogin) (connector.Account[botBinding], error) {
		if in.ChatID <= 0 {
			return connector.Account[botBinding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput, "chat_id must be positive")
		}
		return connector.Account[botBinding]{Binding: botBinding{Token: in.Token, ChatID: in.ChatID},
			DisplayName: "bot " + in.Label, AccountHint: connector.Hint(in.Token)}, nil
	}, connector.FlowOptions{Default: true}))
	clients, err := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b botBinding, why connector.ClientReason) (*botClient, error) {
		bt.mu.Lock()
		block := bt.block
		bt.reasons = append(bt.reasons, why)
		bt.mu.Unlock()
		if block != nil {
			select {
			case <-block:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		bt.mu.Lock()
		defer bt.mu.Unlock()
		if bt.expired[b.Token] {
			return nil, connector.ErrBindingExpired
		}
		if !bt.accept[b.Token] {
			return nil, protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "the bot token was refused by the target")
		}
		c := &botClient{b: b}
		bt.clients = append(bt.clients, c)
		return c, nil
	})
	must(err)
	bt.handle = clients
	_, err = connector.AddConsumer(srv, connector.Consumer[string, botBinding]{
		Key: func(b botBinding) string { return b.Token },
		Run: func(ctx context.Context, tok string, m *connector.Members[botBinding]) error {
			bt.mu.Lock()
			bt.running[tok]++
			bt.starts++
			bt.members[tok] = m
			bt.mu.Unlock()
			<-ctx.Done()
			bt.mu.Lock()
			bt.running[tok]--
			bt.mu.Unlock()
			return nil
		}})
	must(err)
	must(connector.AddTool(srv, "bot_send", func(ctx context.Context, call *connector.Call, in struct {
		Text string `json:"text"`
	}) (map[string]string, error) {
		c, err := clients.Get(call.Channel)
		if err != nil {
			return nil, err
		}
		bt.mu.Lock()
		bt.sentText = append(bt.sentText, in.Text)
		bt.mu.Unlock()
		return map[string]string{"status": "sent", "chat": jsonInt(c.b.ChatID)}, nil
	}, connector.ToolOptions{SideEffect: true}))
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		_, err := clients.Get(ch)
		return err
	})
	must(srv.Start(testCtx(t)))
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close(context.Background())
	})
	return srv, hs.URL
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func connectBot(t *testing.T, base string) (*connectortest.Client, string) {
	t.Helper()
	return connectOpen(t, base, typedKey)
}

// connectOpen connects a host-side client with key (closed with the test)
// and opens a new channel.
func connectOpen(t *testing.T, base, key string) (*connectortest.Client, string) {
	t.Helper()
	ctx := testCtx(t)
	c, _, err := connectortest.Connect(ctx, base, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	return c, ack.ConnectorChannelID
}

func TestIdentityDerivesTheCard(t *testing.T) {
	bt := newBotTarget()
	_, base := startBot(t, connectortest.NewStore(t), bt)
	card, err := connectortest.FetchCard(testCtx(t), base, typedKey)
	if err != nil {
		t.Fatal(err)
	}
	if vs := protocol.ValidateCard(card); len(vs) > 0 {
		t.Fatalf("derived Card invalid: %v", vs)
	}
	if card.Schema != protocol.CardSchema || card.ProtocolVersion != protocol.ProtocolVersion || card.Build.BuildTime == "" {
		t.Errorf("schema/version/build not filled: %q %q %+v", card.Schema, card.ProtocolVersion, card.Build)
	}
	if len(card.Supports.TargetTypes) != 1 || card.Supports.TargetTypes[0] != protocol.TargetIM {
		t.Errorf("target_types = %v", card.Supports.TargetTypes)
	}
	if len(card.Supports.Profiles) != 1 || card.Supports.Profiles[0] != protocol.ProfileIMv2 {
		t.Errorf("profiles = %v, want [im.v2] derived from OnAssistantMessage", card.Supports.Profiles)
	}
	f, ok := card.AuthFlow("bot_login")
	if !ok {
		t.Fatal("bot_login not declared")
	}
	if f.Type != protocol.AuthFlowForm || f.TargetType != protocol.TargetIM || f.Title == "" {
		t.Errorf("flow = %+v", f)
	}
	want := []protocol.AuthField{
		{Name: "token", Label: "Bot token", InputType: protocol.InputPassword, Required: true, Secret: true, HelpText: "From the bot's settings."},
		{Name: "chat_id", Label: "Chat", InputType: protocol.InputText, Required: true, Placeholder: "12345"},
		{Name: "label", Label: "Label", InputType: protocol.InputText},
	}
	if len(f.Fields) != len(want) {
		t.Fatalf("fields = %+v", f.Fields)
	}
	for i, w := range want {
		g := f.Fields[i]
		g.DefaultValue, g.Extensions = nil, nil
		if g.Name != w.Name || g.Label != w.Label || g.InputType != w.InputType || g.Required != w.Required ||
			g.Secret != w.Secret || g.Placeholder != w.Placeholder || g.HelpText != w.HelpText {
			t.Errorf("field %d = %+v, want %+v", i, g, w)
		}
	}
	if d := f.Fields[2].DefaultValue; d == nil || *d != "main" {
		t.Errorf("label default = %v", d)
	}
	if card.UI == nil || card.UI.LoginFlow == nil || card.UI.LoginFlow.FlowID != "bot_login" {
		t.Errorf("ui.login_flow = %+v", card.UI)
	}
	tool, ok := card.Tool("bot_send")
	if !ok || len(tool.RelatedSkillIDs) != 1 || tool.RelatedSkillIDs[0] != "connector-im-bot" {
		t.Errorf("tool = %+v", tool)
	}
	skill := httpGet(t, base+"/skill.md")
	h, err := protocol.ParseSkillHeader([]byte(skill))
	if err != nil || h.Name != "connector-im-bot" || h.Description != "A fake bot." {
		t.Errorf("skill header = %+v, %v\n%s", h, err, skill)
	}
}

func TestTypedFormSignInNumbersAndClient(t *testing.T) {
	bt := newBotTarget()
	srv, base := startBot(t, connectortest.NewStore(t), bt)
	c, id := connectBot(t, base)
	ctx := testCtx(t)

	// A number that is not one is an invalid_auth_input ack error.
	_, err := c.SignInForm(ctx, id, "bot_login", map[string]string{"token": "tok-good-1", "chat_id": "twelve"})
	if !isCode(err, protocol.CodeInvalidAuthInput) {
		t.Fatalf("chat_id=twelve: err = %v, want invalid_auth_input", err)
	}
	if err != nil && strings.Contains(err.Error(), "tok-good-1") {
		t.Fatalf("error quotes the token: %v", err)
	}
	// The text of a number is handed to the handler as a number.
	env, err := c.Request(ctx, protocol.TypeAuthStart, id, map[string]any{"flow_id": "bot_login",
		"input": map[string]any{"token": "tok-good-1", "chat_id": " 4242"}})
	if err != nil {
		t.Fatal(err)
	}
	st := decode[protocol.AuthStatePayload](t, env)
	if st.Status != protocol.AuthAuthenticated {
		t.Fatalf("status = %s (%s)", st.Status, st.Message)
	}
	if st.ConnectionDescriptor == nil || st.ConnectionDescriptor.Target.AccountHint == "" || strings.Contains(st.ConnectionDescriptor.Target.AccountHint, "tok-good-1") {
		t.Errorf("descriptor = %+v", st.ConnectionDescriptor)
	}
	ch, err := srv.Channel(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bt.handle.Binding(ch)
	if err != nil || b.ChatID != 4242 || b.Token != "tok-good-1" {
		t.Fatalf("binding = %+v %v", b, err)
	}
	out, err := connectortest.Invoke[map[string]string](ctx, c, id, "bot_send", map[string]any{"text": "hi"})
	if err != nil || out["chat"] != "4242" {
		t.Fatalf("invoke = %v, %v", out, err)
	}
	client, err := bt.handle.Get(ch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, protocol.TypeAuthLogout, id, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if !client.closed.Load() {
		t.Error("client not closed on logout")
	}
	if _, err := bt.handle.Get(ch); !isCode(err, protocol.CodeConnectionNotAuthenticated) {
		t.Errorf("Get after logout: %v", err)
	}
}

func TestClientErrorFailsTheSignIn(t *testing.T) {
	bt := newBotTarget()
	srv, base := startBot(t, connectortest.NewStore(t), bt)
	c, id := connectBot(t, base)
	_, err := c.SignInForm(testCtx(t), id, "bot_login", map[string]string{"token": "tok-bad", "chat_id": "1"})
	var se *connectortest.SignInError
	if !errors.As(err, &se) || se.State.Status != protocol.AuthFailed {
		t.Fatalf("err = %v, want a failed sign-in", err)
	}
	if !strings.Contains(se.State.Message, "refused by the target") || strings.Contains(se.State.Message, "tok-bad") {
		t.Errorf("message = %q", se.State.Message)
	}
	ch, _ := srv.Channel(id)
	if ch.Authenticated() {
		t.Errorf("channel status = %s after a refused client", ch.Status())
	}
	if bt.runningFor("tok-bad") != 0 {
		t.Error("a consumer runs for a refused sign-in")
	}
}

func TestConsumerIsSharedPerCredential(t *testing.T) {
	bt := newBotTarget()
	_, base := startBot(t, connectortest.NewStore(t), bt)
	c, id1 := connectBot(t, base)
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	id2 := ack.ConnectorChannelID
	for i, id := range []string{id1, id2} {
		if _, err := c.SignInForm(ctx, id, "bot_login", map[string]string{"token": "tok-good-1", "chat_id": jsonInt(int64(10 + i))}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "one consumer", func() bool { return bt.runningFor("tok-good-1") == 1 })
	bt.mu.Lock()
	m, starts := bt.members["tok-good-1"], bt.starts
	bt.mu.Unlock()
	if starts != 1 {
		t.Fatalf("consumer started %d times, want 1", starts)
	}
	if got := m.Channels(); len(got) != 2 {
		t.Fatalf("members = %d, want 2", len(got))
	}
	n, err := m.Publish(ctx, connector.UserMessage{MessageID: "m1", Text: "to chat 11"}, func(b botBinding) bool { return b.ChatID == 11 })
	if err != nil || n != 1 {
		t.Fatalf("publish = %d, %v", n, err)
	}
	msg, err := c.ExpectMessage(ctx, id2, 0)
	if err != nil || msg.Text != "to chat 11" {
		t.Fatalf("message = %+v, %v", msg, err)
	}
	if err := c.Ack(ctx, msg, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	// A file published to every member reaches each one whole.
	body := "a picture's bytes"
	n, err = m.Publish(ctx, connector.UserMessage{MessageID: "m2", Text: "pic",
		Files: []connector.OutgoingFile{{Name: "p.png", MimeType: "image/png", Content: strings.NewReader(body)}}}, nil)
	if err != nil || n != 2 {
		t.Fatalf("publish with a file = %d, %v", n, err)
	}
	for _, id := range []string{id1, id2} {
		got, err := c.ExpectMessage(ctx, id, 0)
		if err != nil || len(got.Files) != 1 || got.Files[0].ByteSize != int64(len(body)) {
			t.Fatalf("channel %s: message %+v, %v", id, got, err)
		}
	}
	if _, err := c.Request(ctx, protocol.TypeAuthLogout, id1, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if bt.runningFor("tok-good-1") != 1 {
		t.Fatal("consumer stopped while a channel still uses the token")
	}
	if _, err := c.Request(ctx, protocol.TypeAuthLogout, id2, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if bt.runningFor("tok-good-1") != 0 {
		t.Fatal("consumer still runs after the last channel left")
	}
}

func TestRestoreMakesClientsBeforeConnected(t *testing.T) {
	st := connectortest.NewStore(t)
	bt := newBotTarget()
	srv, base := startBot(t, st, bt)
	c, id := connectBot(t, base)
	c2 := id
	ctx := testCtx(t)
	if _, err := c.SignInForm(ctx, id, "bot_login", map[string]string{"token": "tok-good-1", "chat_id": "7"}); err != nil {
		t.Fatal(err)
	}
	ch, _ := srv.Channel(id)
	if err := ch.SaveState(ctx, "offset", 41); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Restart on the same store with a target that is slow to answer.
	bt2 := newBotTarget()
	bt2.block = make(chan struct{})
	srv2, _ := startBot(t, st, bt2)
	ch2, err := srv2.Channel(c2)
	if err != nil {
		t.Fatal(err)
	}
	if got := ch2.Status(); got != protocol.StatusOffline {
		t.Fatalf("restored status before the client exists = %s, want offline", got)
	}
	var off int
	if ok, err := ch2.LoadState(ctx, "offset", &off); !ok || err != nil || off != 41 {
		t.Fatalf("state after restart = %d %v %v", off, ok, err)
	}
	close(bt2.block)
	eventually(t, "connected after the client", func() bool { return ch2.Status() == protocol.StatusConnected })
	eventually(t, "consumer after restore", func() bool { return bt2.runningFor("tok-good-1") == 1 })
	if err := ch2.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ch2.LoadState(ctx, "offset", &off); ok {
		t.Error("state survives logout")
	}
}

func TestRestoreWithRevokedBindingExpires(t *testing.T) {
	st := connectortest.NewStore(t)
	bt := newBotTarget()
	srv, base := startBot(t, st, bt)
	c, id := connectBot(t, base)
	if _, err := c.SignInForm(testCtx(t), id, "bot_login", map[string]string{"token": "tok-good-2", "chat_id": "7"}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if err := srv.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	bt2 := newBotTarget()
	bt2.expired["tok-good-2"] = true
	srv2, _ := startBot(t, st, bt2)
	ch, _ := srv2.Channel(id)
	eventually(t, "expired", func() bool { return ch.Status() == protocol.StatusExpired })
}

func TestRegistrationErrorsAtTheCall(t *testing.T) {
	newSrv := func() *connector.Server {
		srv, err := connector.New(connector.Options{Store: connectortest.NewStore(t),
			Identity: connector.Identity{CardID: "im.x", Name: "X", Provider: "x", TargetType: protocol.TargetIM}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	noop := func(context.Context, *connector.Call, struct{}) (struct{}, error) { return struct{}{}, nil }
	srv := newSrv()
	if err := connector.AddTool(srv, "send message", noop, connector.ToolOptions{}); err == nil {
		t.Error("AddTool with an invalid id returned nil")
	}
	if err := srv.Start(testCtx(t)); err == nil {
		t.Error("Start after a bad registration succeeded")
		_ = srv.Close(context.Background())
	}
	srv = newSrv()
	type otherBinding struct{ X string }
	_ = connector.AddForm(srv, "a", func(context.Context, *connector.Channel, botLogin) (connector.Account[botBinding], error) {
		return connector.Account[botBinding]{}, nil
	}, connector.FlowOptions{})
	if _, err := connector.SetClient(srv, func(context.Context, *connector.Channel, otherBinding, connector.ClientReason) (int, error) {
		return 0, nil
	}); err == nil {
		t.Error("SetClient with another binding type returned nil")
	}
	type badForm struct{ Tags []string }
	if err := connector.AddForm(newSrv(), "b", func(context.Context, *connector.Channel, badForm) (connector.Account[botBinding], error) {
		return connector.Account[botBinding]{}, nil
	}, connector.FlowOptions{}); err == nil {
		t.Error("AddForm with a slice field returned nil")
	}
}

func TestAPIKeyStrengthAndTokenSearch(t *testing.T) {
	id := connector.Identity{CardID: "im.x", Name: "X", Provider: "x", TargetType: protocol.TargetIM, Version: "0.1.0"}
	for _, k := range []string{"secret", "0.1.0", "im", "aaaaaaaaaaaaaaaaaaaa", "has space in the key 123"} {
		_, err := connector.New(connector.Options{Store: connectortest.NewStore(t), Identity: id, APIKey: k})
		if err == nil {
			t.Errorf("key %q accepted", k)
		} else if strings.Contains(err.Error(), k) {
			t.Errorf("error quotes the key: %v", err)
		}
	}
	// A strong key that occurs inside a longer word of the Skill is not
	// "in the Skill"; as a whole token it is.
	key := "Zq3-kd82-Lm0x-Pq7"
	for _, tc := range []struct {
		skill string
		fail  bool
	}{
		{"# X\n\nprefix" + key + "suffix\n", false},
		{"# X\n\nthe key is " + key + ".\n", true},
	} {
		srv, err := connector.New(connector.Options{Store: connectortest.NewStore(t), Identity: id, APIKey: key, Skill: []byte(tc.skill)})
		if err != nil {
			t.Fatal(err)
		}
		srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
		err = srv.Start(testCtx(t))
		if (err != nil) != tc.fail {
			t.Errorf("skill %q: Start err = %v, want failure %v", tc.skill, err, tc.fail)
		}
		_ = srv.Close(context.Background())
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
