package connector_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

func delta(id string, seq int64, assembled string) *connector.AssistantDelta {
	return &connector.AssistantDelta{MessageID: id, Sequence: seq, Assembled: assembled}
}

// TestEditStreamOneMessageEdited: deltas post one message and edit it at
// most once per interval; the final edits it into the complete text and
// posts nothing else.
func TestEditStreamOneMessageEdited(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{Interval: time.Second}, "")
	clk := newClock()
	r.stream.SetClock(clk.now)
	ch, ctx := r.channel(t), testCtx(t)
	steps := []struct {
		after     time.Duration
		assembled string
	}{{0, "Hel"}, {300 * time.Millisecond, "Hello, "}, {800 * time.Millisecond, "Hello, wor"}, {200 * time.Millisecond, "Hello, world"}}
	for i, s := range steps {
		clk.advance(s.after)
		if err := r.stream.Delta(ctx, ch, delta("a1", int64(i+1), s.assembled)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a1", Text: "Hello, world!"}); err != nil {
		t.Fatal(err)
	}
	got := b.live()
	// Posted at 0 ms, edited at 1,100 ms (the first delta after a second),
	// then by the final.
	if len(got) != 1 || got[0].Text != "Hello, world!" || strings.Join(got[0].History, "|") != "Hel|Hello, wor" {
		t.Fatalf("board %+v", got)
	}
	if n, _ := r.stream.Tracked(); n != 0 {
		t.Fatalf("%d streams tracked after the final", n)
	}
}

// TestEditStreamOverTheWire: the SDK hands deltas and the final to the
// stream in order, with the answered user message id (the host's
// x-in-reply-to extension member) on both.
func TestEditStreamOverTheWire(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{Interval: time.Nanosecond}, "")
	for i, part := range []string{"one ", "two ", "three"} {
		r.delta(t, "a2", int64(i+1), part, "u-7")
	}
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "a2", Text: "one two three four", InReplyTo: "u-7"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	got := b.live()
	if len(got) != 1 || got[0].Text != "one two three four" || got[0].Part.InReplyTo != "u-7" || len(got[0].History) == 0 {
		t.Fatalf("board %+v", got)
	}
	if m := <-r.msgs; m.InReplyTo != "u-7" {
		t.Fatalf("final's InReplyTo %q", m.InReplyTo)
	}
}

// TestEditStreamBudget: with MaxEdits, deltas use at most MaxEdits-1
// edits and the final the last one; a final that finds the budget spent
// (the target refuses: after a restart the count is gone) lands as a new
// message and the stale one is deleted.
func TestEditStreamBudget(t *testing.T) {
	b := &board{maxEdits: 3}
	st := connectortest.NewStore(t)
	opts := connector.EditStreamOptions[int]{MaxEdits: 3, Interval: time.Second}
	r := startStreamRig(t, st, b, opts, "")
	clk := newClock()
	r.stream.SetClock(clk.now)
	ch, ctx := r.channel(t), testCtx(t)
	text := ""
	for i := range 10 {
		text += fmt.Sprintf("w%d ", i)
		clk.advance(2 * time.Second)
		if err := r.stream.Delta(ctx, ch, delta("a3", int64(i+1), text)); err != nil {
			t.Fatal(err)
		}
	}
	if _, edits := b.counts(); edits != 2 {
		t.Fatalf("deltas made %d edits, want MaxEdits-1 = 2", edits)
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a3", Text: text + "end"}); err != nil {
		t.Fatal(err)
	}
	if got := b.live(); len(got) != 1 || got[0].Text != text+"end" || len(got[0].History) != 3 {
		t.Fatalf("board %+v", got)
	}

	// A stream whose edits were spent before a restart: the new process
	// does not know the count, the target refuses, the final lands anew.
	b.maxEdits = 1
	clk.advance(time.Minute)
	if err := r.stream.Delta(ctx, ch, delta("a4", 1, "partial")); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Second)
	if err := r.stream.Delta(ctx, ch, delta("a4", 2, "partial, more")); err != nil {
		t.Fatal(err)
	}
	r.stop()
	opts.Delete = b.del
	r = startStreamRig(t, st, b, opts, r.ch)
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "a4", Text: "partial, more, and the end"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	got := b.texts()
	if len(got) != 2 || got[1] != "partial, more, and the end" {
		t.Fatalf("board %q: want the first answer and the final posted anew, the stale stream deleted", got)
	}
}

// TestEditStreamEditFails: an edit that fails stops the stream's edits
// and the final still edits the message; a message the target cannot
// edit any more gets the final as a new message; an edit the target
// refuses for a while (not ErrNotEditable) fails the final, for a
// redelivery, instead of posting twice.
func TestEditStreamEditFails(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{Interval: time.Nanosecond, Delete: nil}, "")
	ch, ctx := r.channel(t), testCtx(t)
	if err := r.stream.Delta(ctx, ch, delta("a5", 1, "one ")); err != nil {
		t.Fatal(err)
	}
	b.failEdit = []error{errors.New("502 Bad Gateway")}
	if err := r.stream.Delta(ctx, ch, delta("a5", 2, "one two ")); err == nil {
		t.Fatal("a failed edit was not reported")
	}
	if err := r.stream.Delta(ctx, ch, delta("a5", 3, "one two three ")); err != nil {
		t.Fatal(err)
	}
	if _, edits := b.counts(); edits != 1 {
		t.Fatalf("%d edits: the stream went on editing after a failure", edits)
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a5", Text: "one two three four"}); err != nil {
		t.Fatal(err)
	}
	if got := b.live(); len(got) != 1 || got[0].Text != "one two three four" || len(got[0].History) != 1 {
		t.Fatalf("after a failed edit: %+v", got)
	}

	if err := r.stream.Delta(ctx, ch, delta("a6", 1, "gone")); err != nil {
		t.Fatal(err)
	}
	_ = b.del(ctx, ch, 2) // the user deleted it
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a6", Text: "gone, then back"}); err != nil {
		t.Fatal(err)
	}
	if got := b.texts(); strings.Join(got, "|") != "one two three four|gone, then back" {
		t.Fatalf("after a deleted stream: %q", got)
	}

	if err := r.stream.Delta(ctx, ch, delta("a7", 1, "wait")); err != nil {
		t.Fatal(err)
	}
	b.failEdit = []error{connector.Temporary(errors.New("503 Service Unavailable"))}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a7", Text: "wait for it"}); err == nil || !connector.IsTemporary(err) {
		t.Fatalf("Final = %v, want the temporary failure", err)
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "a7", Text: "wait for it"}); err != nil {
		t.Fatal(err)
	}
	if got := b.texts(); len(got) != 3 || got[2] != "wait for it" {
		t.Fatalf("after a temporary failure: %q", got)
	}
}

// TestEditStreamRateLimitPauses: an edit refused with Retry-After pauses
// the stream's edits until the hint passes, then they resume.
func TestEditStreamRateLimitPauses(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{Interval: time.Second}, "")
	clk := newClock()
	r.stream.SetClock(clk.now)
	ch, ctx := r.channel(t), testCtx(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.stream.Delta(ctx, ch, delta("a8", 1, "a")))
	clk.advance(2 * time.Second)
	b.failEdit = []error{&connector.RateLimitError{RetryAfter: 10 * time.Second, Err: errors.New("429")}}
	must(r.stream.Delta(ctx, ch, delta("a8", 2, "a b")))
	for i, text := range []string{"a b c", "a b c d"} {
		clk.advance(3 * time.Second)
		must(r.stream.Delta(ctx, ch, delta("a8", int64(i+3), text)))
	}
	if _, edits := b.counts(); edits != 1 {
		t.Fatalf("%d edit calls during the pause, want only the refused one", edits)
	}
	clk.advance(5 * time.Second)
	must(r.stream.Delta(ctx, ch, delta("a8", 5, "a b c d e")))
	if got := b.live(); len(got) != 1 || got[0].Text != "a b c d e" {
		t.Fatalf("after the pause: %+v", got)
	}
}

// TestEditStreamLongFinalResumes: a final longer than the limit keeps
// its first part in the streamed message and posts the rest, then the
// files; a failure midway is retried by the redelivery from the failed
// part on, posting nothing twice.
func TestEditStreamLongFinalResumes(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{
		Interval: time.Nanosecond, Limit: connector.TextLimit{Max: 12}}, "")
	ch, ctx := r.channel(t), testCtx(t)
	if err := r.stream.Delta(ctx, ch, delta("a9", 1, "first part ")); err != nil {
		t.Fatal(err)
	}
	m := &connector.AssistantMessage{MessageID: "a9", Text: "first part second part third part",
		Files: []connector.File{{Filename: "chart.png"}}}
	b.failSend = []error{nil, errors.New("500 Internal Server Error")} // part 2 fails once
	if err := r.stream.Final(ctx, ch, m); err == nil {
		t.Fatal("a failed part was not reported")
	}
	if err := r.stream.Final(ctx, ch, m); err != nil {
		t.Fatal(err)
	}
	got := b.live()
	if strings.Join(b.texts(), "|") != "first part |second part |third part|[file chart.png]" || len(got[0].History) != 0 {
		t.Fatalf("board %+v", got)
	}
	if got[3].Part.Index != 3 || got[1].Part.Key == got[2].Part.Key || got[0].Part.Key == "" {
		t.Fatalf("parts %+v", got)
	}
}

// TestEditStreamAcrossRestart: the posted message is recorded durably, so
// after a restart both a further delta and the final edit it instead of
// posting a second message.
func TestEditStreamAcrossRestart(t *testing.T) {
	b := &board{}
	st := connectortest.NewStore(t)
	opts := connector.EditStreamOptions[int]{Interval: time.Nanosecond}
	r := startStreamRig(t, st, b, opts, "")
	r.delta(t, "b1", 1, "partial", "")
	eventually(t, "the stream's post", func() bool { return len(b.live()) == 1 })
	r.stop()
	r = startStreamRig(t, st, b, opts, r.ch)
	ch, ctx := r.channel(t), testCtx(t)
	if err := r.stream.Delta(ctx, ch, delta("b1", 2, "partial, then")); err != nil {
		t.Fatal(err)
	}
	if a := r.final(t, protocol.ChatMessagePayload{MessageID: "b1", Text: "partial, then complete"}); a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	got := b.live()
	if len(got) != 1 || got[0].Text != "partial, then complete" || strings.Join(got[0].History, "|") != "partial|partial, then" {
		t.Fatalf("board %+v", got)
	}
	if sends, _ := b.counts(); sends != 1 {
		t.Fatalf("%d posts, want 1", sends)
	}
}

// TestEditStreamBounds: the streams tracked are bounded in count, bytes
// and time; a stream dropped from memory still gets its final edited,
// through the durable record.
func TestEditStreamBounds(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{
		Interval: time.Nanosecond, MaxStreams: 2, MaxBytes: 2000, TTL: time.Minute}, "")
	clk := newClock()
	r.stream.SetClock(clk.now)
	ch, ctx := r.channel(t), testCtx(t)
	for i, id := range []string{"c1", "c2", "c3"} {
		clk.advance(time.Second)
		if err := r.stream.Delta(ctx, ch, delta(id, 1, fmt.Sprintf("stream %d", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if n, bytes := r.stream.Tracked(); n != 2 || bytes > 2000 {
		t.Fatalf("tracked %d streams, %d bytes; want 2 within 2000", n, bytes)
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: "c1", Text: "stream 1, final"}); err != nil {
		t.Fatal(err)
	}
	if got := b.texts(); strings.Join(got, "|") != "stream 1, final|stream 2|stream 3" {
		t.Fatalf("board %q", got)
	}
	clk.advance(2 * time.Minute) // c2 and c3 expire
	if err := r.stream.Delta(ctx, ch, delta("c4", 1, "stream 4")); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.stream.Tracked(); n != 1 {
		t.Fatalf("tracked %d streams after the TTL, want 1", n)
	}
	huge := strings.Repeat("x", 600) // ids beyond MaxBytes/4 are not tracked
	if err := r.stream.Delta(ctx, ch, delta(huge, 1, "not streamed")); err != nil {
		t.Fatal(err)
	}
	if err := r.stream.Final(ctx, ch, &connector.AssistantMessage{MessageID: huge, Text: "posted once"}); err != nil {
		t.Fatal(err)
	}
	if got := b.texts(); len(got) != 5 || got[4] != "posted once" {
		t.Fatalf("board %q", got)
	}
}

func TestEditStreamNeedsSendAndEdit(t *testing.T) {
	if _, err := connector.NewEditStream(connector.EditStreamOptions[int]{}); err == nil {
		t.Fatal("NewEditStream without Send and Edit succeeded")
	}
}

// TestEditStreamClassify: a failed call's error goes through Classify to
// the ack (the target's refusal, retryable or not); a final with files and
// no SendFile fails instead of dropping them.
func TestEditStreamClassify(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{
		Classify: func(ctx context.Context, ch *connector.Channel, err error) error {
			return &protocol.Error{Code: protocol.CodeTargetDeliveryFailed, Message: "the board refused: " + err.Error(), Retryable: true}
		}}, "")
	b.failSend = []error{errors.New("board closed")}
	a := r.final(t, protocol.ChatMessagePayload{MessageID: "d1", Text: "hello"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable || a.Message != "the board refused: board closed" {
		t.Fatalf("ack %+v", a)
	}
	plain, err := connector.NewEditStream(connector.EditStreamOptions[int]{Send: b.send, Edit: b.edit})
	if err != nil {
		t.Fatal(err)
	}
	m := &connector.AssistantMessage{MessageID: "d2", Text: "with a file", Files: []connector.File{{Filename: "x.pdf"}}}
	if err := plain.Final(testCtx(t), r.channel(t), m); err == nil || !strings.Contains(err.Error(), "no SendFile") {
		t.Fatalf("Final without SendFile = %v", err)
	}
	if len(b.live()) != 0 {
		t.Fatalf("board %+v: nothing may be posted before the refusal", b.live())
	}
}

// TestEditStreamPost: a tool's send posts the text in parts, then the
// files, with keys stable for the call's idempotency key (a resend posts
// with the same keys, which a deduplicating target drops), the tool call
// id on each part, and refuses an empty send.
func TestEditStreamPost(t *testing.T) {
	b := &board{}
	r := startStreamRig(t, connectortest.NewStore(t), b, connector.EditStreamOptions[int]{Limit: connector.TextLimit{Max: 12}}, "")
	ch, ctx := r.channel(t), testCtx(t)
	call := &connector.Call{Channel: ch, ToolCallID: "call-1", IdempotencyKey: "call-1"}
	refs, err := r.stream.Post(ctx, call, "first part second part", &connector.File{Filename: "a.pdf"})
	if err != nil || len(refs) != 3 {
		t.Fatalf("Post = %v, %v", refs, err)
	}
	again, err := r.stream.Post(ctx, call, "first part second part", &connector.File{Filename: "a.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	got := b.live()
	if strings.Join(b.texts(), "|") != "first part |second part|[file a.pdf]|first part |second part|[file a.pdf]" || again[0] == refs[0] {
		t.Fatalf("board %q", b.texts())
	}
	for i := range 3 {
		if got[i].Part.Key != got[i+3].Part.Key || got[i].Part.ToolCallID != "call-1" || got[i].Part.Index != i {
			t.Fatalf("part %d: %+v vs %+v", i, got[i].Part, got[i+3].Part)
		}
	}
	if _, err := r.stream.Post(ctx, call, "  "); !isCode(err, protocol.CodeInvalidArguments) {
		t.Fatalf("empty Post = %v", err)
	}
}
