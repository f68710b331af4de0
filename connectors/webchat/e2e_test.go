package webchat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// newWebchat builds the web chat as xconn serve webchat does: on a store
// of its own in the data directory (which keeps the browsers' sessions and
// the chat history across restarts), closed after Serve.
func newWebchat(env e2e.Env) (e2e.Server, error) {
	db, err := store.Open(context.Background(), "sqlite:"+filepath.Join(env.SDK.DataDir, "webchat.db"), store.Options{DataDir: env.SDK.DataDir})
	if err != nil {
		return nil, err
	}
	env.SDK.Store = db
	conn, err := webchat.New(webchat.Options{SDK: env.SDK, PublicURL: env.URL, LoginPollInterval: 50 * time.Millisecond})
	if err != nil {
		db.Close()
		return nil, err
	}
	return e2e.ServeFunc(func(ctx context.Context, ln net.Listener) error {
		defer db.Close()
		return conn.Server().Serve(ctx, ln)
	}), nil
}

// TestE2E is the kit's end-to-end with a browser in room "lobby" as the
// person: the conformance suite signed in with the room flow, the browser
// posting on its request; an in-process host with the echo agent answering
// the browser exactly once, before and after a restart, and refusing a
// second channel for the room; a SIGKILL in the middle of a streamed
// answer; the assistant side over the wire; the access code and the API
// key in no log line or packet. The browser reads its event stream the
// whole time, across restarts, as the page does.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		New: newWebchat,
		Fake: func(tb testing.TB, connURL string) *e2e.Fake {
			b := startBrowser(tb, connURL)
			return &e2e.Fake{Say: b.say, Said: b.said}
		},
		SignIn:    e2e.SignIn{Flow: webchat.FlowRoom, Input: map[string]string{"room": lobby, "access_code": lobbyCode}},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"room": lobby, "access_code": "another-code-5678"}, Message: `room "lobby" is already in use`},
		Tool:      webchat.ToolSend,
		ToolArgs:  []byte(`{"text":"from the conformance suite"}`),
	})
}

const (
	lobby     = "lobby"
	lobbyCode = "s3cret-1234"
)

// browser is a person in room lobby of the web chat at base: it enters
// the room with its code before it first writes, then reads the room's
// event stream, reconnecting when it ends (a restart), and keeps every
// assistant message by id, as the page does.
type browser struct {
	base   string
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	joined  bool              // the person is in the room (since the first post)
	entered bool              // the connector knows the browser's session
	ids     []string          // assistant message ids, first seen first
	text    map[string]string // their latest text
}

func startBrowser(tb testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{base: base, client: &http.Client{Jar: jar, Transport: &http.Transport{DisableKeepAlives: true}},
		done: make(chan struct{}), text: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.read(ctx)
	tb.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

// say enters the room (again after a restart: a room's browser sessions
// live in the connector's memory) and posts text.
func (b *browser) say(ctx context.Context, text string) error {
	for try := 0; ; try++ {
		if err := b.enter(ctx); err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]string{"text": text})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/webchat/api/messages?room="+lobby, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := b.client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		switch {
		case res.StatusCode == http.StatusAccepted:
			return nil
		case res.StatusCode == http.StatusUnauthorized && try == 0:
			b.leave()
		default:
			return fmt.Errorf("post message: %s", res.Status)
		}
	}
}

// leave forgets the browser's session, as a restarted connector did.
func (b *browser) leave() {
	b.mu.Lock()
	b.entered = false
	b.mu.Unlock()
}

func (b *browser) enter(ctx context.Context) error {
	b.mu.Lock()
	entered := b.entered
	b.mu.Unlock()
	if entered {
		return nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/webchat/rooms/"+lobby,
		strings.NewReader(url.Values{"access_code": {lobbyCode}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := b.client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("enter room: %s", res.Status)
	}
	b.mu.Lock()
	b.joined, b.entered = true, true
	b.mu.Unlock()
	return nil
}

// said returns the assistant messages the browser has seen.
func (b *browser) said(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.ids))
	for i, id := range b.ids {
		out[i] = b.text[id]
	}
	return out, nil
}

// read follows the event stream until ctx ends.
func (b *browser) read(ctx context.Context) {
	defer close(b.done)
	for ctx.Err() == nil {
		b.mu.Lock()
		joined := b.joined
		b.mu.Unlock()
		if joined && b.enter(ctx) == nil { // again after a restart
			b.stream(ctx)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stream reads one event stream to its end.
func (b *browser) stream(ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/webchat/api/events?room="+lobby, nil)
	res, err := b.client.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusUnauthorized {
		b.leave() // a restarted connector forgot the room's session
		return
	}
	if res.StatusCode != http.StatusOK {
		return
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	typ := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && typ == webchat.EventMessage:
			var m webchat.MessageEvent
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) == nil && m.From == "assistant" {
				b.mu.Lock()
				if _, seen := b.text[m.MessageID]; !seen {
					b.ids = append(b.ids, m.MessageID)
				}
				b.text[m.MessageID] = m.Text
				b.mu.Unlock()
			}
		case line == "":
			typ = ""
		}
	}
}
