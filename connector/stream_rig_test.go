package connector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// board is a fake chat target for the EditStream tests: messages are
// posted, edited and deleted; an edit of a deleted or unknown message, or
// past the board's edit cap, is refused as not editable; failures can be
// injected. Safe for concurrent use.
type board struct {
	mu       sync.Mutex
	msgs     []*boardMsg
	maxEdits int     // edits one message allows (0: any)
	failSend []error // errors of the next sends, in order (nil: it succeeds)
	failEdit []error // errors of the next edits, in order
	sends    int
	edits    int
}

type boardMsg struct {
	ID      int
	Text    string
	History []string // earlier texts, oldest first
	Part    connector.MessagePart
	Deleted bool
}

func (b *board) send(_ context.Context, _ *connector.Channel, part connector.MessagePart, text string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sends++
	if len(b.failSend) > 0 {
		err := b.failSend[0]
		b.failSend = b.failSend[1:]
		if err != nil {
			return 0, err
		}
	}
	m := &boardMsg{ID: len(b.msgs) + 1, Text: text, Part: part}
	b.msgs = append(b.msgs, m)
	return m.ID, nil
}

func (b *board) edit(_ context.Context, _ *connector.Channel, id int, text string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.edits++
	if len(b.failEdit) > 0 {
		err := b.failEdit[0]
		b.failEdit = b.failEdit[1:]
		return err
	}
	if id < 1 || id > len(b.msgs) || b.msgs[id-1].Deleted {
		return fmt.Errorf("board: message %d not found: %w", id, connector.ErrNotEditable)
	}
	m := b.msgs[id-1]
	if b.maxEdits > 0 && len(m.History) >= b.maxEdits {
		return fmt.Errorf("board: message %d edited %d times: %w", id, len(m.History), connector.ErrNotEditable)
	}
	m.History = append(m.History, m.Text)
	m.Text = text
	return nil
}

func (b *board) del(_ context.Context, _ *connector.Channel, id int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id < 1 || id > len(b.msgs) {
		return errors.New("board: no such message")
	}
	b.msgs[id-1].Deleted = true
	return nil
}

// live returns copies of the messages not deleted, in post order.
func (b *board) live() []boardMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []boardMsg
	for _, m := range b.msgs {
		if !m.Deleted {
			c := *m
			c.History = append([]string(nil), m.History...)
			out = append(out, c)
		}
	}
	return out
}

func (b *board) texts() []string {
	var out []string
	for _, m := range b.live() {
		out = append(out, m.Text)
	}
	return out
}

func (b *board) counts() (sends, edits int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sends, b.edits
}

const streamKey = "stream-test-key-0123456789"

type boardLogin struct {
	Name string `json:"name" label:"Name"`
}

// streamRig is a connector whose IM v2 handlers are an EditStream over a
// board, served on loopback, with a host-side test client signed in on
// one channel.
type streamRig struct {
	srv    *connector.Server
	stream *connector.EditStream[int]
	c      *connectortest.Client
	ch     string
	hs     *httptest.Server
	msgs   chan *connector.AssistantMessage // finals seen by the handler
	stop   func()
}

// startStreamRig starts the rig on st; channel "" opens and signs in a new
// channel, else the rig reopens it (after a restart). Files of a final are
// posted to the board as "[file <name>]" (unless opts has a SendFile).
func startStreamRig(t testing.TB, st *store.DB, b *board, opts connector.EditStreamOptions[int], channel string) *streamRig {
	t.Helper()
	srv, err := connector.New(connector.Options{Store: st, APIKey: streamKey, DataDir: t.TempDir(),
		Skill:    []byte("# Board\n\nTalk on the board.\n"),
		Identity: connector.Identity{CardID: "im.board", Name: "Board", Provider: "board", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	if err := connector.AddForm(srv, "board_login", func(ctx context.Context, ch *connector.Channel, in boardLogin) (connector.Account[boardLogin], error) {
		return connector.Account[boardLogin]{Binding: in, DisplayName: in.Name}, nil
	}, connector.FlowOptions{Default: true}); err != nil {
		t.Fatal(err)
	}
	if opts.Send == nil {
		opts.Send = b.send
	}
	if opts.Edit == nil {
		opts.Edit = b.edit
	}
	if opts.SendFile == nil {
		opts.SendFile = func(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (int, error) {
			return b.send(ctx, ch, part, "[file "+f.Filename+"]")
		}
	}
	stream, err := connector.NewEditStream(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := &streamRig{srv: srv, stream: stream, msgs: make(chan *connector.AssistantMessage, 16)}
	srv.OnAssistantDelta(stream.Delta)
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		err := stream.Final(ctx, ch, m)
		select {
		case r.msgs <- m:
		default:
		}
		return err
	})
	if err := srv.Start(rigCtx(t)); err != nil {
		t.Fatal(err)
	}
	r.hs = httptest.NewServer(srv)
	ctx := rigCtx(t)
	c, _, err := connectortest.Connect(ctx, r.hs.URL, streamKey)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = c.Close()
		r.hs.Close()
		_ = srv.Close(context.Background())
	}
	t.Cleanup(r.stop)
	if channel == "" {
		ack, err := c.Open(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if st, err := c.SignInForm(ctx, ack.ConnectorChannelID, "board_login", map[string]string{"name": "ann"}); err != nil || st.Status != protocol.AuthAuthenticated {
			t.Fatalf("sign-in: %+v %v", st, err)
		}
		channel = ack.ConnectorChannelID
	} else if _, err := c.Open(ctx, channel); err != nil {
		t.Fatal(err)
	}
	r.ch = channel
	return r
}

// channel returns the rig's channel for direct calls of the stream.
func (r *streamRig) channel(t testing.TB) *connector.Channel {
	t.Helper()
	ch, err := r.srv.Channel(r.ch)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// delta sends one chat.message.delta over the wire.
func (r *streamRig) delta(t *testing.T, msgID string, seq int64, text, inReplyTo string) {
	t.Helper()
	env, _ := connectortest.Packet(protocol.TypeChatMessageDelta, r.ch,
		protocol.ChatDeltaPayload{MessageID: msgID, Sequence: seq, Text: text, InReplyTo: inReplyTo})
	if err := r.c.Send(testCtx(t), env); err != nil {
		t.Fatal(err)
	}
}

// final sends a final chat.message over the wire and returns its ack.
func (r *streamRig) final(t *testing.T, p protocol.ChatMessagePayload) protocol.ChatAckPayload {
	t.Helper()
	return sendChat(t, r.c, r.ch, p)
}

// clock is a settable time for the stream's edit interval and TTL.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rigCtx bounds one step of a rig.
func rigCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(tb.Context(), 15*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
