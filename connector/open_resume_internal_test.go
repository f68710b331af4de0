package connector

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
)

// TestOpenResumesOnlyDeferredChannels checks when a (re)open resumes
// delivery: while the last attempt of a queue's head failed temporarily
// (until an attempt delivers or fails for good), once for a channel
// restored with entries pending, and never otherwise.
func TestOpenResumesOnlyDeferredChannels(t *testing.T) {
	temporary := errors.New("connection closed")
	terminal := &protocol.Error{Code: protocol.CodeInvalidPacket, Message: "rejected"}
	type send struct {
		mark uint8
		err  error
	}
	tests := []struct {
		name    string
		initial uint8
		sends   []send
		// opens lists what each open in turn must report.
		opens []bool
	}{
		{name: "nothing attempted", opens: []bool{false, false}},
		{name: "delivered", sends: []send{{deferIMv2, nil}}, opens: []bool{false}},
		{name: "temporary failure", sends: []send{{deferIMv2, temporary}}, opens: []bool{true, true}},
		{name: "temporary, then delivered", sends: []send{{deferIMv2, temporary}, {deferIMv2, nil}}, opens: []bool{false}},
		{name: "temporary, then failed for good", sends: []send{{deferIMv2, temporary}, {deferIMv2, terminal}}, opens: []bool{false}},
		{name: "terminal failure", sends: []send{{deferIMv2, terminal}}, opens: []bool{false}},
		{name: "ack timeout", sends: []send{{deferIMv2, context.DeadlineExceeded}}, opens: []bool{true}},
		{name: "channel not open", sends: []send{{deferIMv1, &protocol.Error{Code: protocol.CodeChannelNotOpen}}}, opens: []bool{true}},
		{name: "queues apart", sends: []send{{deferIMv1, temporary}, {deferIMv2, nil}}, opens: []bool{true, true}},
		{name: "restored with entries pending", initial: deferRestored, opens: []bool{true, false}},
		{name: "restored, then failing", initial: deferRestored, sends: []send{{deferIMv2, temporary}}, opens: []bool{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{channels: map[string]*chanState{"cch_a": {deferred: tc.initial}, "cch_b": {}}}
			for _, sd := range tc.sends {
				f := s.trackSend(sd.mark, func(context.Context, delivery.Entry) error { return sd.err })
				if err := f(context.Background(), delivery.Entry{Channel: "cch_a"}); err != sd.err {
					t.Fatalf("send returned %v, want %v", err, sd.err)
				}
			}
			// A send for a channel that is gone changes nothing.
			gone := s.trackSend(deferIMv2, func(context.Context, delivery.Entry) error { return temporary })
			_ = gone(context.Background(), delivery.Entry{Channel: "cch_gone"})
			for i, want := range tc.opens {
				s.mu.Lock()
				got := s.channels["cch_a"].takeDeferred()
				other := s.channels["cch_b"].takeDeferred()
				s.mu.Unlock()
				if got != want {
					t.Fatalf("open %d resumes = %v, want %v", i+1, got, want)
				}
				if other {
					t.Fatal("another channel resumes")
				}
			}
		})
	}
}

// TestTrackSendConcurrent runs sends of two queues and opens of one
// channel at once (for the race detector); the marks end as the last send
// of each queue left them.
func TestTrackSendConcurrent(t *testing.T) {
	s := &Server{channels: map[string]*chanState{"cch_a": {}}}
	fail := errors.New("connection closed")
	v2 := s.trackSend(deferIMv2, func(context.Context, delivery.Entry) error { return fail })
	v1 := s.trackSend(deferIMv1, func(context.Context, delivery.Entry) error { return nil })
	e := delivery.Entry{Channel: "cch_a"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_ = v2(context.Background(), e)
			}
		})
		wg.Go(func() {
			for range 200 {
				_ = v1(context.Background(), e)
			}
		})
		wg.Go(func() {
			for range 200 {
				s.mu.Lock()
				s.channels["cch_a"].takeDeferred()
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.channels["cch_a"].deferred; got != deferIMv2 {
		t.Fatalf("marks %b, want %b", got, deferIMv2)
	}
}
