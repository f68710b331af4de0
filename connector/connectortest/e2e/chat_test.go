package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

// The kit's own tests run it against kitchat, a small chat connector for
// chatFake written on the public SDK as a connector author would: a bot
// token signs a channel in, one long poll per token publishes what the
// person writes, deltas post a message and edit it (remembered durably, so
// that an answer streamed again after a crash edits the same message), the
// final edits it into the complete text. A flaw switches one broken
// behaviour on, for the tests that show the kit catching it.
type flaw int

const (
	sound         flaw = iota
	postsTwice         // every final is posted twice
	logsToken          // the bot token is logged through the unredacted logger
	forgetsStream      // streams are kept in memory only
)

// kitLogin is kitchat's sign-in form; kitBinding what a channel keeps.
type kitLogin struct {
	Token string `json:"token" label:"Bot token" secret:"true"`
}

type kitBinding struct {
	Token string `json:"token" secret:"true"`
}

// chatClient calls chatFake's API with one bot token.
type chatClient struct {
	base, token string
	http        *http.Client
}

func (c *chatClient) call(ctx context.Context, method, path string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		if err := json.NewEncoder(&body).Encode(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("kitchat: %s %s: HTTP %d", method, path, res.StatusCode)
	}
	if out != nil {
		return json.NewDecoder(res.Body).Decode(out)
	}
	return nil
}

func (c *chatClient) send(ctx context.Context, text string) (int, error) {
	var m message
	err := c.call(ctx, http.MethodPost, "/send", message{Text: text}, &m)
	return m.ID, err
}

func (c *chatClient) edit(ctx context.Context, id int, text string) error {
	return c.call(ctx, http.MethodPost, "/edit", message{ID: id, Text: text}, nil)
}

// stream is the durable record of a streamed answer: the message to edit.
type stream struct {
	Post int `json:"post"`
}

// kitchat builds the connector with flaw f.
func kitchat(f flaw) e2e.NewFunc {
	return func(env e2e.Env) (e2e.Server, error) {
		o := env.SDK
		o.Identity = connector.Identity{CardID: "im.kitchat", Name: "Kit chat", TargetType: protocol.TargetIM, Provider: "kitchat"}
		o.Skill = []byte("# Kit chat\n\nAnswer the person briefly.\n")
		srv, err := connector.New(o)
		if err != nil {
			return nil, err
		}
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		client := func(token string) *chatClient { return &chatClient{base: env.Fake, token: token, http: hc} }
		connector.AddForm(srv, "kitchat_login", func(ctx context.Context, ch *connector.Channel, in kitLogin) (connector.Account[kitBinding], error) {
			if f == logsToken {
				env.SDK.Logger.Info("kitchat: sign-in", "token", in.Token)
			}
			return connector.Account[kitBinding]{Binding: kitBinding{Token: in.Token}, DisplayName: "Kit bot"}, nil
		}, connector.FlowOptions{Title: "Bot token", Default: true})
		clients, _ := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b kitBinding, _ connector.ClientReason) (*chatClient, error) {
			c := client(b.Token)
			if err := c.call(ctx, http.MethodGet, "/me", nil, nil); err != nil {
				return nil, protocol.Errorf(protocol.CodeInvalidAuthInput, "kitchat refused the bot token")
			}
			return c, nil
		})
		connector.AddConsumer(srv, connector.Consumer[string, kitBinding]{
			Key: func(b kitBinding) string { return b.Token },
			Run: func(ctx context.Context, token string, m *connector.Members[kitBinding]) error {
				c, after := client(token), 0
				for ctx.Err() == nil {
					var ups []update
					if err := c.call(ctx, http.MethodGet, "/updates?after="+strconv.Itoa(after), nil, &ups); err != nil {
						return err
					}
					for _, u := range ups {
						// A message published again is a no-op: starting over
						// after a restart loses nothing and repeats nothing.
						if _, err := m.Publish(ctx, connector.UserMessage{MessageID: "kc-" + strconv.Itoa(u.ID), Text: u.Text}, nil); err != nil {
							return err
						}
						after = u.ID
					}
				}
				return nil
			}})
		connector.AddTool(srv, "kitchat_send", func(ctx context.Context, call *connector.Call, in struct {
			Text string `json:"text" desc:"Text to post."`
		}) (message, error) {
			c, err := clients.Get(call.Channel)
			if err != nil {
				return message{}, err
			}
			id, err := c.send(ctx, in.Text)
			return message{ID: id, Text: in.Text}, err
		}, connector.ToolOptions{Description: "Post a message.", SideEffect: true})
		var mu sync.Mutex
		open := map[string]int{} // channel/message → the message being edited
		srv.OnAssistantDelta(func(ctx context.Context, ch *connector.Channel, d *connector.AssistantDelta) error {
			c, err := clients.Get(ch)
			if err != nil {
				return err
			}
			key := ch.ID() + "/" + d.MessageID
			mu.Lock()
			post := open[key]
			mu.Unlock()
			var s stream
			if ok, _ := ch.LoadProgress(ctx, d.MessageID, &s); post == 0 && ok && f != forgetsStream {
				post = s.Post
			}
			if post != 0 {
				err = c.edit(ctx, post, d.Assembled)
			} else if post, err = c.send(ctx, d.Assembled); err == nil {
				err = ch.SaveProgress(ctx, d.MessageID, stream{Post: post})
			}
			mu.Lock()
			open[key] = post
			mu.Unlock()
			return err
		})
		srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
			c, err := clients.Get(ch)
			if err != nil {
				return err
			}
			key := ch.ID() + "/" + m.MessageID
			mu.Lock()
			post := open[key]
			delete(open, key)
			mu.Unlock()
			var s stream
			if ok, _ := ch.LoadProgress(ctx, m.MessageID, &s); post == 0 && ok {
				post = s.Post
			}
			if post != 0 {
				err = c.edit(ctx, post, m.Text)
			} else {
				_, err = c.send(ctx, m.Text)
			}
			if err == nil && f == postsTwice {
				_, err = c.send(ctx, m.Text)
			}
			if err != nil {
				return err
			}
			return ch.ClearProgress(ctx, m.MessageID)
		})
		return srv, nil
	}
}

// kitTarget is kitchat with flaw f, as a connector's e2e test fills the
// kit's table.
func kitTarget(f flaw) e2e.Target {
	return e2e.Target{
		New: kitchat(f),
		Fake: func(tb testing.TB, _ string) *e2e.Fake {
			fake := startChatFake()
			tb.Cleanup(fake.close)
			return &e2e.Fake{Addr: fake.hs.URL, Say: fake.say, Said: fake.said, Streams: true, SayWhileDown: true}
		},
		SignIn:    e2e.SignIn{Flow: "kitchat_login", Input: map[string]string{"token": chatToken}},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"token": "kitchat-wrong-token-000000"}, Message: "kitchat refused the bot token"},
		Tool:      "kitchat_send",
		ToolArgs:  json.RawMessage(`{"text": "posted by tool.invoke"}`),
	}
}

// TestRun: a sound connector passes every scenario, the crash scenario
// without a partial answer left behind.
func TestRun(t *testing.T) { e2e.Run(t, kitTarget(sound)) }
