package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

func newInbox(t *testing.T, mod func(*delivery.InboxOptions)) *delivery.Inbox {
	t.Helper()
	opts := delivery.InboxOptions{Storage: delivery.NewMemoryStorage(0)}
	if mod != nil {
		mod(&opts)
	}
	in, err := delivery.NewInbox(opts)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func begin(t *testing.T, in *delivery.Inbox, ch, id string, c delivery.Content) delivery.Verdict {
	t.Helper()
	v, err := in.Begin(context.Background(), ch, id, c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func commit(t *testing.T, in *delivery.Inbox, ch, id string, c delivery.Content) delivery.Verdict {
	t.Helper()
	v, err := in.Commit(context.Background(), ch, id, c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestInboxVerdicts(t *testing.T) {
	in := newInbox(t, nil)
	msg := delivery.Content{Text: "hi", Files: []protocol.ChatFile{{Type: "file", FileRef: "f1", DownloadURL: "/files/refs/f1"}}}
	other := delivery.Content{Text: "hi", Files: []protocol.ChatFile{{Type: "file", FileRef: "f2", DownloadURL: "/files/refs/f2"}}}
	sideEffects := 0
	deliver := func(c delivery.Content) protocol.ChatAckPayload {
		v := begin(t, in, "c", "m1", c)
		if v != delivery.VerdictNew {
			return v.Ack("m1")
		}
		sideEffects++
		return commit(t, in, "c", "m1", c).Ack("m1")
	}
	if ack := deliver(msg); ack.Status != protocol.AckAccepted {
		t.Fatalf("first delivery = %+v, want accepted", ack)
	}
	if ack := deliver(msg); ack.Status != protocol.AckDuplicate {
		t.Fatalf("redelivery = %+v, want duplicate", ack)
	}
	ack := deliver(other)
	if ack.Status != protocol.AckRejected || ack.Code != string(protocol.CodeMessageConflict) || ack.Retryable == nil || *ack.Retryable {
		t.Fatalf("conflicting content = %+v, want rejected message_conflict retryable=false", ack)
	}
	if sideEffects != 1 {
		t.Fatalf("side effects = %d, want exactly 1", sideEffects)
	}
	// The same message on another channel is another message.
	if v := begin(t, in, "c2", "m1", msg); v != delivery.VerdictNew {
		t.Fatalf("other channel = %v, want new", v)
	}
}

func TestInboxCrashBeforeCommitRedelivers(t *testing.T) {
	st := delivery.NewMemoryStorage(0)
	in, _ := delivery.NewInbox(delivery.InboxOptions{Storage: st})
	c := delivery.Content{Text: "x"}
	if v := begin(t, in, "c", "m", c); v != delivery.VerdictNew {
		t.Fatal(v)
	}
	// Concurrent redelivery while the first is in progress.
	if v := begin(t, in, "c", "m", c); v != delivery.VerdictBusy {
		t.Fatalf("concurrent delivery = %v, want busy", v)
	}
	ack := delivery.VerdictBusy.Ack("m")
	if ack.Code != string(protocol.CodeChannelBusy) || !*ack.Retryable {
		t.Fatalf("busy ack = %+v", ack)
	}
	// The side effect failed: Abort, then the redelivery is new again.
	in.Abort("c", "m")
	if v := begin(t, in, "c", "m", c); v != delivery.VerdictNew {
		t.Fatalf("after abort = %v, want new", v)
	}
	// A process crash loses the in-progress mark but not the storage: a new
	// Inbox over the same storage treats the message as new.
	in2, _ := delivery.NewInbox(delivery.InboxOptions{Storage: st})
	if v := begin(t, in2, "c", "m", c); v != delivery.VerdictNew {
		t.Fatalf("after crash = %v, want new (nothing was committed)", v)
	}
	if v := commit(t, in2, "c", "m", c); v != delivery.VerdictNew {
		t.Fatalf("commit = %v", v)
	}
	// The record is kept after the ack.
	if v := begin(t, in, "c", "m", c); v != delivery.VerdictBusy && v != delivery.VerdictDuplicate {
		t.Fatalf("after commit = %v", v)
	}
	in.Abort("c", "m")
	if v := begin(t, in, "c", "m", c); v != delivery.VerdictDuplicate {
		t.Fatalf("after commit in another inbox = %v, want duplicate", v)
	}
}

func TestInboxBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := newInbox(t, func(o *delivery.InboxOptions) {
			o.MaxPerChannel = 3
			o.MaxAge = time.Hour
			o.MaxInProgress = 2
		})
		c := delivery.Content{Text: "x"}
		for i := range 4 {
			id := fmt.Sprint("m", i)
			begin(t, in, "c", id, c)
			commit(t, in, "c", id, c)
			time.Sleep(time.Second)
		}
		if v := begin(t, in, "c", "m0", c); v != delivery.VerdictNew {
			t.Fatalf("m0 beyond the per-channel bound = %v, want new (forgotten)", v)
		}
		in.Abort("c", "m0")
		if v := begin(t, in, "c", "m3", c); v != delivery.VerdictDuplicate {
			t.Fatalf("m3 = %v, want duplicate", v)
		}
		time.Sleep(2 * time.Hour)
		if v := begin(t, in, "c", "m3", c); v != delivery.VerdictNew {
			t.Fatalf("m3 after MaxAge = %v, want new", v)
		}
		if v := commit(t, in, "c", "m3", c); v != delivery.VerdictNew {
			t.Fatalf("commit over a stale record = %v, want new", v)
		}
		begin(t, in, "c", "m4", c)
		commit(t, in, "c", "m4", c)
		time.Sleep(2 * time.Hour)
		n, err := in.Prune(context.Background())
		if err != nil || n != 2 {
			t.Fatalf("prune = %d %v, want the 2 stale records", n, err)
		}
		begin(t, in, "c", "p1", c)
		begin(t, in, "c", "p2", c)
		if v := begin(t, in, "c", "p3", c); v != delivery.VerdictBusy {
			t.Fatalf("beyond MaxInProgress = %v, want busy", v)
		}
	})
}

func TestRejectAck(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      string
		retryable bool
		message   string
	}{
		{"protocol error", &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "refused"}, "target_delivery_failed", false, "refused"},
		{"retryable", &protocol.Error{Code: protocol.CodeChannelBusy, Retryable: true}, "channel_busy", true, ""},
		{"wrapped", fmt.Errorf("ctx: %w", protocol.Errorf(protocol.CodeInvalidPacket, "bad")), "invalid_packet", false, "bad"},
		{"plain error hides its text", fmt.Errorf("token sk-secret leaked"), "internal_error", true, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := delivery.RejectAck("m", tt.err)
			if a.Status != protocol.AckRejected || a.Code != tt.code || a.Retryable == nil || *a.Retryable != tt.retryable || a.Message != tt.message {
				t.Fatalf("RejectAck = %+v", a)
			}
		})
	}
}

func TestAckResultAndIsTemporary(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		ack       protocol.ChatAckPayload
		nilErr    bool
		temporary bool
	}{
		{"accepted", protocol.ChatAckPayload{Status: protocol.AckAccepted}, true, false},
		{"duplicate", protocol.ChatAckPayload{Status: protocol.AckDuplicate}, true, false},
		{"rejected retryable", protocol.ChatAckPayload{Status: protocol.AckRejected, Code: "target_delivery_failed", Retryable: &yes}, false, true},
		{"rejected final", protocol.ChatAckPayload{Status: protocol.AckRejected, Code: "target_delivery_failed", Retryable: &no}, false, false},
		{"rejected without flag", protocol.ChatAckPayload{Status: protocol.AckRejected, Code: "x"}, false, false},
		{"channel_busy is temporary", protocol.ChatAckPayload{Status: protocol.AckRejected, Code: "channel_busy", Retryable: &no}, false, true},
		{"channel_not_open is temporary", protocol.ChatAckPayload{Status: protocol.AckRejected, Code: "channel_not_open", Retryable: &no}, false, true},
		{"unknown status", protocol.ChatAckPayload{Status: "maybe"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := delivery.AckResult(tt.ack)
			if (err == nil) != tt.nilErr || delivery.IsTemporary(err) != tt.temporary {
				t.Fatalf("AckResult = %v, temporary %v", err, delivery.IsTemporary(err))
			}
		})
	}
	for _, err := range []error{context.DeadlineExceeded, context.Canceled, fmt.Errorf("write: broken pipe")} {
		if !delivery.IsTemporary(err) {
			t.Errorf("IsTemporary(%v) = false, want true", err)
		}
	}
}

func TestContentHash(t *testing.T) {
	base := delivery.Content{Text: "ab", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "a.png"}}}
	variants := []delivery.Content{
		{Text: "ab"},
		{Text: "a", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "a.png"}}},
		{Text: "ab", Files: []protocol.ChatFile{{Type: "file", FileRef: "f1", Filename: "a.png"}}},
		{Text: "ab", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "b.png"}}},
		{Text: "ab", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "a.png", ByteSize: 1}}},
		{Text: "ab", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "a.png"}, {Type: "image", FileRef: "f2"}}},
		{Text: "", Files: []protocol.ChatFile{{Type: "image", FileRef: "abf1", Filename: "a.png"}}},
	}
	h := delivery.ContentHash(base)
	if h != delivery.ContentHash(delivery.Content{Text: "ab", Files: []protocol.ChatFile{{Type: "image", FileRef: "f1", Filename: "a.png"}}}) {
		t.Fatal("equal contents hash differently")
	}
	for i, v := range variants {
		if delivery.ContentHash(v) == h {
			t.Errorf("variant %d hashes like the base", i)
		}
	}
}

func FuzzContentHash(f *testing.F) {
	f.Add("a", "b", "c", "d")
	f.Add("", "", "x", "")
	f.Fuzz(func(t *testing.T, text1, ref1, text2, ref2 string) {
		c1 := delivery.Content{Text: text1, Files: []protocol.ChatFile{{FileRef: ref1}}}
		c2 := delivery.Content{Text: text2, Files: []protocol.ChatFile{{FileRef: ref2}}}
		same := text1 == text2 && ref1 == ref2
		if (delivery.ContentHash(c1) == delivery.ContentHash(c2)) != same {
			t.Fatalf("hash equality %v for contents equal=%v", !same, same)
		}
	})
}
