package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/feishu"
	"github.com/xconn/xconn/connectors/feishu/feishutest"
	"github.com/xconn/xconn/connectors/telegram"
	"github.com/xconn/xconn/connectors/telegram/telegramtest"
	"github.com/xconn/xconn/host/openai"
	"github.com/xconn/xconn/host/openai/openaitest"
	"github.com/xconn/xconn/protocol"
)

// The text a model sends with a connector's send tool, naming no channel.
const pingText = "proactive ping from the model"

// pingCall is the model's call of tool with {"text": pingText} only, as a
// model writes it when it cannot know the channel's opaque id.
func pingCall(tool string) openaitest.ToolCall {
	return openaitest.ToolCall{ID: "call_ping_1", Name: tool, Arguments: `{"text":"` + pingText + `"}`}
}

// checkScopedRequest checks what the model saw and got back: tool offered
// without the channel argument, connector_message_send with it, and the
// tool's result fed back without an error.
func checkScopedRequest(t *testing.T, model *openaitest.Server, tool string) {
	t.Helper()
	reqs := model.WaitRequests(2, 10*time.Second)
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	seen := false
	for _, tl := range reqs[0].Body.Tools {
		params := string(tl.Function.Parameters)
		switch tl.Function.Name {
		case tool:
			seen = true
			if strings.Contains(params, protocol.ChannelIDArgument) {
				t.Errorf("the model was offered %s with the channel argument: %s", tool, params)
			}
			if !strings.Contains(params, `"text"`) {
				t.Errorf("%s lost its text argument: %s", tool, params)
			}
		case "connector_message_send":
			if !strings.Contains(params, protocol.ChannelIDArgument) {
				t.Errorf("connector_message_send lost its explicit target: %s", params)
			}
		}
	}
	if !seen {
		t.Fatalf("the model was not offered %s: %q", tool, reqs[0].Body.ToolNames())
	}
	ms := reqs[1].Body.Messages
	res := ms[len(ms)-1]
	if res.Role != "tool" || res.ToolCallID != "call_ping_1" || strings.Contains(res.Text(), `"error"`) {
		t.Fatalf("tool result fed back: %s %s", res.Role, res.Text())
	}
}

// TestScopedSendWebchat: in a web chat room the model calls
// webchat_message_send with {"text":...} only; the message appears in the
// room, next to the model's answer.
func TestScopedSendWebchat(t *testing.T) {
	s := newChatSystem(t, nil)
	b, _ := s.room("pia", "lobby", "code-5678")
	s.model.Enqueue(openaitest.Calls("", pingCall("webchat_message_send")), openaitest.Text("Pinged."))
	b.post("ping me")
	msgs, _ := b.collect(2)
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text)
	}
	if !slices.Contains(got, pingText) || !slices.Contains(got, "Pinged.") {
		t.Fatalf("room shows %q, want the tool's %q and the answer", got, pingText)
	}
	checkScopedRequest(t, s.model, "webchat_message_send")
}

// scopedAgent starts the fake model and an openai agent in a kit host.
func scopedAgent(t *testing.T, secrets e2e.Secrets, tool string) (*openaitest.Server, *e2e.Host) {
	t.Helper()
	model := openaitest.NewServer(openaitest.Options{APIKey: "sk-scope-canary-31"})
	t.Cleanup(model.Close)
	model.Enqueue(openaitest.Calls("", pingCall(tool)), openaitest.Text("Pinged."))
	model.SetFallback(openaitest.Text("(nothing more)"))
	agent, err := openai.New(openai.Options{Model: "fake-model", BaseURL: model.URL, APIKey: "sk-scope-canary-31",
		Retry: openai.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	h := e2e.StartHost(t, e2e.HostOptions{Agent: agent, Secrets: append(e2e.Secrets{"sk-scope-canary-31"}, secrets...)})
	agent.Bind(h.Host, nil)
	return model, h
}

const (
	tgKey   = "scope-telegram-key-41f0c2a9e7"
	tgToken = "987654321:AAScopeTestTokenValue0123456789ab"
	tgChat  = int64(777001)
)

// TestScopedSendTelegram: a person writes in the bound Telegram chat; the
// model calls telegram_message_send with {"text":...} only and the bot
// posts it in that chat.
func TestScopedSendTelegram(t *testing.T) {
	f := telegramtest.New()
	f.AddBot(tgToken, telegramtest.Bot{ID: 987654321, Username: "scope_bot", FirstName: "Scope"})
	f.AddChat(telegramtest.Chat{ID: tgChat, FirstName: "Alice"})
	api := f.Start()
	t.Cleanup(f.Close)
	conn := e2e.Start(t, e2e.Config{APIKey: tgKey, Fake: api, Secrets: e2e.Secrets{tgToken}},
		e2e.Build(telegram.New, func(env e2e.Env) telegram.Options {
			return telegram.Options{SDK: env.SDK, APIURL: env.Fake, PollTimeout: time.Second,
				EditInterval: 50 * time.Millisecond, MaxRetryWait: 3 * time.Second}
		}))
	model, h := scopedAgent(t, e2e.Secrets{tgToken}, telegram.ToolSend)
	cardID := h.AdmitConnector(conn.URL, tgKey)
	e2e.Eventually(t, "the data plane online", func() bool { return h.Online(cardID) })
	if _, err := h.SignIn(context.Background(), "alice", cardID, e2e.SignIn{Flow: telegram.FlowBot,
		Input: map[string]string{"bot_token": tgToken, "chat_id": fmt.Sprint(tgChat)}}); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	f.SendText(tgToken, tgChat, "ping me")
	e2e.Await(t, "the tool's message in the chat", func(ctx context.Context) ([]telegramtest.Sent, error) {
		return f.WaitSent(ctx, tgChat, func(s []telegramtest.Sent) bool {
			return slices.ContainsFunc(s, func(m telegramtest.Sent) bool { return m.Text == pingText })
		})
	})
	checkScopedRequest(t, model, telegram.ToolSend)
}

const (
	fsKey    = "scope-feishu-key-6a2d90b1c4"
	fsApp    = "cli_scope0a1b2c3d4e5"
	fsSecret = "scopeAppSecretValue0123456789abcd"
	fsChat   = "oc_p2p_scope_alice"
)

// TestScopedSendFeishu: a person writes to the bot in their Feishu p2p
// chat; the model calls feishu_message_send with {"text":...} only and the
// bot sends it to that chat.
func TestScopedSendFeishu(t *testing.T) {
	f := feishutest.New()
	f.AddApp(fsApp, fsSecret)
	api := f.Start()
	t.Cleanup(f.Close)
	conn := e2e.Start(t, e2e.Config{APIKey: fsKey, Fake: api, Secrets: e2e.Secrets{fsSecret}},
		e2e.Build(feishu.New, func(env e2e.Env) feishu.Options {
			return feishu.Options{SDK: env.SDK, APIURL: env.Fake, AccountsURL: env.Fake, EditInterval: 20 * time.Millisecond,
				MaxRetryWait: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		}))
	model, h := scopedAgent(t, e2e.Secrets{fsSecret}, feishu.ToolSend)
	cardID := h.AdmitConnector(conn.URL, fsKey)
	e2e.Eventually(t, "the data plane online", func() bool { return h.Online(cardID) })
	if _, err := h.SignIn(context.Background(), "alice", cardID, e2e.SignIn{Flow: feishu.FlowApp,
		Input: map[string]string{"app_id": fsApp, "app_secret": fsSecret}}); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2e.Wait)
	defer cancel()
	if err := f.WaitConnected(ctx, fsApp); err != nil {
		t.Fatalf("long connection: %v", err)
	}
	if _, err := f.SendText(ctx, fsApp, fsChat, "ping me"); err != nil {
		t.Fatal(err)
	}
	checkScopedRequest(t, model, feishu.ToolSend)
	e2e.Await(t, "the tool's message in the chat", func(ctx context.Context) ([]feishutest.Sent, error) {
		return f.WaitSent(ctx, fsChat, func(s []feishutest.Sent) bool {
			return slices.ContainsFunc(s, func(m feishutest.Sent) bool { return m.Text() == pingText })
		})
	})
	if s := e2e.Secrets(f.IssuedTokens()); len(s) > 0 {
		h.CheckSecrets(t, s)
	}
}
