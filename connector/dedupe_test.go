package connector_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
)

// TestDedupeWindow is issue 33 item 4: publishing a MessageID again is a
// no-op only within the dedupe window. With Options.DedupeWindow 10 min, a
// message that expired undelivered (OutboxTTL 1 min) is not published
// again 5 min later, and is published anew once the window passed; with
// the default window (24 h) it is still a no-op then.
func TestDedupeWindow(t *testing.T) {
	const id = "cch_dedupe_000000000000000000"
	for _, tc := range []struct {
		name   string
		window time.Duration
		again  bool // published anew after the window of the first case
	}{
		{"window 10m", 10 * time.Minute, true},
		{"default window", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				h := &healthTarget{steps: make(chan func(context.Context, *connector.Members[healthBinding]) error)}
				srv, db := startHealthWith(t, dir, h, func(o *connector.Options) {
					o.OutboxTTL, o.DedupeWindow = time.Minute, tc.window
				}, id)
				synctest.Wait()
				ch, err := srv.Channel(id)
				if err != nil {
					t.Fatal(err)
				}
				pending := func() int {
					n, err := db.OutboxPending(ctx, "connector.im.v2")
					if err != nil {
						t.Fatal(err)
					}
					return n
				}
				msg := connector.UserMessage{MessageID: "target-msg-1", Text: "hello"}
				if err := ch.Publish(ctx, msg); err != nil {
					t.Fatal(err)
				}
				if n := pending(); n != 1 {
					t.Fatalf("pending %d after the first Publish, want 1", n)
				}
				time.Sleep(2 * time.Minute) // nobody is connected: the message expires
				synctest.Wait()
				if n := pending(); n != 0 {
					t.Fatalf("pending %d after the TTL, want 0 (expired)", n)
				}
				time.Sleep(3 * time.Minute)
				if err := ch.Publish(ctx, msg); err != nil {
					t.Fatal(err)
				}
				if n := pending(); n != 0 {
					t.Fatalf("within the window the same MessageID was published again (pending %d)", n)
				}
				time.Sleep(10 * time.Minute) // past the 10 min window and a sweep
				synctest.Wait()
				if err := ch.Publish(ctx, msg); err != nil {
					t.Fatal(err)
				}
				if got := pending() == 1; got != tc.again {
					t.Fatalf("after 15 min: published anew = %v, want %v", got, tc.again)
				}
			})
		})
	}
}

// TestDedupeHistory: the remembered MessageIDs are bounded by
// Options.DedupeHistory over the whole connector: past it the oldest is
// forgotten and publishing it again sends it anew, within the window.
func TestDedupeHistory(t *testing.T) {
	const id = "cch_dedupe_000000000000000000"
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := &healthTarget{steps: make(chan func(context.Context, *connector.Members[healthBinding]) error)}
		srv, db := startHealthWith(t, dir, h, func(o *connector.Options) {
			o.OutboxTTL, o.DedupeHistory = time.Minute, 2
		}, id)
		synctest.Wait()
		ch, _ := srv.Channel(id)
		pending := func() int {
			n, err := db.OutboxPending(ctx, "connector.im.v2")
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, mid := range []string{"m1", "m2", "m3", "m4"} {
			if err := ch.Publish(ctx, connector.UserMessage{MessageID: mid, Text: mid}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Minute) // expires undelivered: one outcome each
			synctest.Wait()
		}
		if err := ch.Publish(ctx, connector.UserMessage{MessageID: "m4", Text: "m4"}); err != nil {
			t.Fatal(err)
		}
		if n := pending(); n != 0 {
			t.Fatalf("the newest MessageID was published again (pending %d)", n)
		}
		if err := ch.Publish(ctx, connector.UserMessage{MessageID: "m1", Text: "m1"}); err != nil {
			t.Fatal(err)
		}
		if n := pending(); n != 1 {
			t.Fatalf("the oldest MessageID, beyond DedupeHistory 2, was not published anew (pending %d)", n)
		}
	})
}
