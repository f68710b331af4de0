package host

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// countingAgent wraps Echo and counts messages.
type countingAgent struct {
	n     atomic.Int32
	files atomic.Int32
}

func (a *countingAgent) HandleMessage(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
	a.n.Add(1)
	for _, f := range msg.Files {
		if b, err := os.ReadFile(f.Path); err == nil && len(b) > 0 {
			a.files.Add(1)
		}
	}
	return Echo{}.HandleMessage(ctx, msg, reply)
}

func waitAck(t *testing.T, f *fakeConnector) protocol.ChatAckPayload {
	t.Helper()
	select {
	case a := <-f.ackCh:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no chat.message.ack")
	}
	return protocol.ChatAckPayload{}
}

func waitFinal(t *testing.T, f *fakeConnector) protocol.ChatMessagePayload {
	t.Helper()
	select {
	case p := <-f.finalCh:
		return p
	case <-time.After(30 * time.Second): // a retry after a restart waits its backoff; CI machines are loaded
		t.Fatal("no assistant final")
	}
	return protocol.ChatMessagePayload{}
}

func TestChatRoundTripWithFiles(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "/pre")
	agent := &countingAgent{}
	th := newTestHost(t, "", func(o *Options) { o.Agent = agent })
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "lee", "im.fake")
	f.set(func(f *fakeConnector) { f.downloads["f_1"] = []byte("file body") })

	msg := protocol.ChatMessagePayload{MessageID: "m1", Text: "hello big world",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1", Filename: "a.txt", DownloadURL: "/files/refs/f_1"}}}
	pkt := f.publish(uc.ChannelID, msg)
	ack := waitAck(t, f)
	if ack.MessageID != "m1" || ack.Status != protocol.AckAccepted {
		t.Fatalf("ack = %+v", ack)
	}
	acks := f.packets(protocol.TypeChatMessageAck)
	if len(acks) != 1 || acks[0].ReplyTo != pkt || acks[0].ConnectorChannelID != uc.ChannelID {
		t.Fatalf("ack envelope = %+v", acks)
	}
	final := waitFinal(t, f)
	if final.Text != "You said: hello big world" || len(final.Files) != 1 {
		t.Fatalf("final = %+v", final)
	}
	f.mu.Lock()
	up := string(f.uploads[final.Files[0].FileRef])
	f.mu.Unlock()
	if up != "file body" || final.Files[0].Filename != "a.txt" {
		t.Fatalf("uploaded %q as %+v", up, final.Files[0])
	}
	if agent.files.Load() != 1 {
		t.Fatal("the agent did not get the downloaded file")
	}
	// Deltas: one message_id, sequences from 1, text adds up to the final.
	var text strings.Builder
	for i, e := range f.packets(protocol.TypeChatMessageDelta) {
		var d protocol.ChatDeltaPayload
		_ = e.DecodePayload(&d)
		if d.MessageID != final.MessageID || d.Sequence != int64(i+1) {
			t.Fatalf("delta %d = %+v (final %s)", i, d, final.MessageID)
		}
		text.WriteString(d.Text)
	}
	if text.String() != final.Text {
		t.Fatalf("deltas %q != final %q", text.String(), final.Text)
	}
	var acts []string
	for _, e := range f.packets(protocol.TypeChatActivity) {
		var a protocol.ChatActivityPayload
		_ = e.DecodePayload(&a)
		acts = append(acts, a.Status)
	}
	if strings.Join(acts, ",") != "thinking,idle" {
		t.Fatalf("activities = %v", acts)
	}
	eventually(t, "final delivered outcome", func() bool {
		o, ok, _ := th.FinalOutcome(ctxT(t), uc.ID, final.MessageID)
		return ok && o.Kind == delivery.OutcomeDelivered
	})

	// The same message again: duplicate, no second agent call.
	f.publish(uc.ChannelID, msg)
	if a := waitAck(t, f); a.Status != protocol.AckDuplicate {
		t.Fatalf("redelivery ack = %+v", a)
	}
	// Same id, other content: conflict.
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "m1", Text: "something else"})
	a := waitAck(t, f)
	if a.Status != protocol.AckRejected || a.Code != string(protocol.CodeMessageConflict) || a.Retryable == nil || *a.Retryable {
		t.Fatalf("conflict ack = %+v", a)
	}
	if agent.n.Load() != 1 {
		t.Fatalf("agent called %d times", agent.n.Load())
	}
}

func TestChatRejections(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var fail atomic.Bool
	th := newTestHost(t, "", func(o *Options) {
		o.MaxFileBytes = 4
		o.Agent = AgentFunc(func(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
			if fail.Load() {
				return context.DeadlineExceeded
			}
			return nil
		})
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "max", "im.fake")
	f.set(func(f *fakeConnector) { f.downloads["big"] = []byte("more than four bytes") })

	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "big1",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "big", DownloadURL: "/files/refs/big"}}})
	if a := waitAck(t, f); a.Status != protocol.AckRejected || a.Code != string(CodeFileTooLarge) || *a.Retryable {
		t.Fatalf("too large: %+v", a)
	}
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "gone",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "x", DownloadURL: "/files/refs/x"}}})
	if a := waitAck(t, f); a.Status != protocol.AckRejected || a.Code != string(CodeFileDownloadFailed) || *a.Retryable {
		t.Fatalf("missing file: %+v", a)
	}
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "empty"})
	if a := waitAck(t, f); a.Status != protocol.AckRejected || a.Code != string(protocol.CodeInvalidPacket) {
		t.Fatalf("empty message: %+v", a)
	}
	// An agent error is a retryable rejection; a redelivery then succeeds.
	fail.Store(true)
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "retry", Text: "x"})
	if a := waitAck(t, f); a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable {
		t.Fatalf("agent failure: %+v", a)
	}
	fail.Store(false)
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "retry", Text: "x"})
	if a := waitAck(t, f); a.Status != protocol.AckAccepted {
		t.Fatalf("retry: %+v", a)
	}
}

func TestChatOutsideNegotiatedCatalogIsFiltered(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var calls atomic.Int32
	th := newTestHost(t, "", func(o *Options) {
		o.SupportedProfiles = []protocol.Profile{protocol.ProfileIMv1} // the host speaks only IM v1
		o.Agent = AgentFunc(func(context.Context, *UserMessage, ReplyStream) error { calls.Add(1); return nil })
	})
	f.set(func(f *fakeConnector) {
		f.card.Supports.Profiles = []protocol.Profile{protocol.ProfileIMv2, protocol.ProfileIMv1}
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "ned", "im.fake")
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "m", Text: "x"})
	// A ping after it proves the dispatcher went past the message.
	ping := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fping", RequestID: "rping", Type: protocol.TypePing}
	f.sendOn(uc.ChannelID, ping)
	eventually(t, "pong", func() bool { return th.pongs(f) > 0 })
	time.Sleep(20 * time.Millisecond)
	if calls.Load() != 0 || f.count(protocol.TypeChatMessageAck) != 0 {
		t.Fatal("a chat.message outside the negotiated catalog was processed or answered")
	}
	// Replies on that channel are dropped silently too.
	r, err := th.Reply(ctxT(t), uc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Final(ctxT(t), "hi"); err != nil {
		t.Fatal(err)
	}
	if err := r.Delta(ctxT(t), "x"); err != nil {
		t.Fatal(err)
	}
	st, _ := th.OutboxStats(ctxT(t))
	if st.Pending != 0 || f.count(protocol.TypeChatMessageDelta) != 0 {
		t.Fatalf("filtered reply was queued or sent: %+v", st)
	}
}

func TestMessagePushIMv1(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.legacy", "")
	got := make(chan *UserMessage, 4)
	th := newTestHost(t, "", func(o *Options) {
		o.Agent = AgentFunc(func(_ context.Context, m *UserMessage, _ ReplyStream) error { got <- m; return nil })
	})
	f.set(func(f *fakeConnector) {
		f.card.Supports.Profiles = []protocol.Profile{protocol.ProfileIMv1}
		for i := range f.card.Tools {
			f.card.Tools[i].Profile = protocol.ProfileIMv1
		}
	})
	th.admitOnline(t, f)
	f.set(func(f *fakeConnector) {}) // descriptors follow the card profiles below
	uc := th.signinRoom(t, "ola", "im.legacy")
	_ = uc
	push := func() {
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fpush", ConnectorChannelID: uc.ChannelID, Type: protocol.TypeMessagePush}
		_ = env.SetPayload(protocol.MessagePushPayload{Provider: "legacy", Profile: protocol.ProfileIMv1, EventKind: protocol.IMv1EventMessageReceived,
			MessageID: "v1-1", SenderID: "u1", MessageType: "text", RawText: "yo", Text: "User message: yo"})
		f.sendOn(uc.ChannelID, env)
	}
	push()
	select {
	case m := <-got:
		if m.Profile != protocol.ProfileIMv1 || m.Push == nil || m.Text != "User message: yo" || m.MessageID != "v1-1" {
			t.Fatalf("message = %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("message.push not delivered")
	}
	push() // duplicate: dropped
	ping := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fping", RequestID: "rping", Type: protocol.TypePing}
	f.sendOn(uc.ChannelID, ping)
	eventually(t, "pong", func() bool { return th.pongs(f) > 0 })
	time.Sleep(20 * time.Millisecond)
	if len(got) != 0 {
		t.Fatal("duplicate message.push delivered")
	}
}

// pongs counts the pongs the host sent to f.
func (th *testHost) pongs(f *fakeConnector) int { return f.count(protocol.TypePong) }

func TestResolveDownloadURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ base, raw, want string }{
		{"http://h:1", "/files/refs/a", "http://h:1/files/refs/a"},
		{"http://h:1/pre", "/files/refs/a", "http://h:1/pre/files/refs/a"},
		{"http://h:1/pre", "/pre/files/refs/a?sig=1", "http://h:1/pre/files/refs/a?sig=1"},
		{"http://h:1/pre", "files/refs/a", "http://h:1/pre/files/refs/a"},
		{"http://h:1/pre", "https://cdn/x", "https://cdn/x"},
		{"http://h:1", "ftp://x/y", ""},
		{"http://h:1", "//evil/x", ""},
		// Empty is no address: it used to name the connector's root page.
		{"http://h:1/pre", "", ""},
		{"http://h:1", "  ", ""},
	}
	for _, tt := range tests {
		base, _ := parseURL(tt.base)
		u, err := resolveDownloadURL(base, tt.raw)
		got := ""
		if err == nil {
			got = u.String()
		}
		if got != tt.want {
			t.Errorf("resolve(%s, %s) = %q, want %q", tt.base, tt.raw, got, tt.want)
		}
	}
}

func FuzzResolveDownloadURL(f *testing.F) {
	for _, s := range []string{"/files/refs/a", "https://x/y", "rel", "//h/x", "%zz", "/pre/a?b#c"} {
		f.Add(s)
	}
	base, _ := parseURL("http://127.0.0.1:9/pre")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := resolveDownloadURL(base, raw)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("scheme %q accepted", u.Scheme)
		}
		if u.User != nil {
			t.Fatalf("userinfo kept: %s", u)
		}
	})
}

func TestPruneOldDownloads(t *testing.T) {
	t.Parallel()
	th := newTestHost(t, "", func(o *Options) { o.FileRetention = time.Hour })
	dir := filepath.Join(th.filesDir, "uch_x")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "in-1-old.txt")
	fresh := filepath.Join(dir, "in-2-new.txt")
	other := filepath.Join(dir, "agent-owned.txt")
	for _, p := range []string{old, fresh, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	_ = os.Chtimes(old, past, past)
	_ = os.Chtimes(other, past, past)
	th.pruneFiles()
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatal("old download kept")
	}
	for _, p := range []string{fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s removed: %v", p, err)
		}
	}
}

// TestChatReplyQueuedBeforeAFailureIsSentOnce: the Agent queues its reply
// and then fails (as when the host dies between the reply and the commit
// of the user message); the redelivered message is answered again, and
// the connector still receives one assistant message, not two.
func TestChatReplyQueuedBeforeAFailureIsSentOnce(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var calls atomic.Int32
	th := newTestHost(t, "", func(o *Options) {
		o.Agent = AgentFunc(func(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
			if err := (Echo{}).HandleMessage(ctx, msg, reply); err != nil {
				return err
			}
			if calls.Add(1) == 1 {
				return &protocol.Error{Code: protocol.CodeInternal, Message: "died after the reply", Retryable: true}
			}
			return nil
		})
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "ada", "im.fake")

	msg := protocol.ChatMessagePayload{MessageID: "once", Text: "hi there"}
	f.publish(uc.ChannelID, msg)
	if a := waitAck(t, f); a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable {
		t.Fatalf("first delivery: %+v", a)
	}
	first := waitFinal(t, f)
	f.publish(uc.ChannelID, msg)
	if a := waitAck(t, f); a.Status != protocol.AckAccepted {
		t.Fatalf("redelivery: %+v", a)
	}
	if calls.Load() != 2 {
		t.Fatalf("agent ran %d times, want 2", calls.Load())
	}
	eventually(t, "the first final delivered", func() bool {
		o, ok, _ := th.FinalOutcome(ctxT(t), uc.ID, first.MessageID)
		return ok && o.Kind == delivery.OutcomeDelivered
	})
	// Another message gets its own reply.
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "next", Text: "again"})
	if a := waitAck(t, f); a.Status != protocol.AckAccepted {
		t.Fatalf("next: %+v", a)
	}
	next := waitFinal(t, f)
	if next.MessageID == first.MessageID || next.Text != "You said: again" {
		t.Fatalf("second reply %+v, first %s", next, first.MessageID)
	}
	var ids []string
	for _, e := range f.packets(protocol.TypeChatMessage) {
		var p protocol.ChatMessagePayload
		_ = e.DecodePayload(&p)
		ids = append(ids, p.MessageID)
	}
	if len(ids) != 2 || ids[0] != first.MessageID || ids[1] != next.MessageID {
		t.Fatalf("assistant messages sent: %v (want %s then %s, once each)", ids, first.MessageID, next.MessageID)
	}
}

func TestDerivedID(t *testing.T) {
	a := derivedID("amsg_", "uc_1", "m1", "1")
	if a != derivedID("amsg_", "uc_1", "m1", "1") || !strings.HasPrefix(a, "amsg_") || len(a) != len("amsg_")+26 {
		t.Fatalf("derivedID = %q", a)
	}
	for _, other := range [][]string{{"uc_1", "m1", "2"}, {"uc_2", "m1", "1"}, {"uc_1m", "1", "1"}, {"uc_", "1m1", "1"}} {
		if derivedID("amsg_", other...) == a {
			t.Fatalf("%v gives the same id as (uc_1, m1, 1)", other)
		}
	}
}

// TestChatStoppingHostAcksWhatItTook: the host stops while its Agent is
// handling a message; the Agent completes, and the connector still gets
// the accepted ack before the socket closes (otherwise it could expire a
// message whose reply went out).
func TestChatStoppingHostAcksWhatItTook(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	started, release := make(chan struct{}), make(chan struct{})
	th := newTestHost(t, "", func(o *Options) {
		o.Agent = AgentFunc(func(ctx context.Context, msg *UserMessage, reply ReplyStream) error {
			close(started)
			<-release // an Agent finishing its work as the host stops
			return nil
		})
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "bo", "im.fake")
	f.publish(uc.ChannelID, protocol.ChatMessagePayload{MessageID: "taken", Text: "hello"})
	<-started
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- th.Close(ctx)
	}()
	time.Sleep(50 * time.Millisecond) // let Close cancel the session first
	close(release)
	if a := waitAck(t, f); a.MessageID != "taken" || a.Status != protocol.AckAccepted {
		t.Fatalf("ack while stopping: %+v", a)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
