package host

import (
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/store"
)

// A pending final whose channel record names a connector the host has not
// loaded stays pending: only a deleted channel fails a final. Before the
// fix it was failed for good with connection_not_found, which is also what
// happened to a final due at start when the outbox ran before the stored
// connectors were loaded.
func TestPendingFinalOfUnloadedConnectorStaysPending(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openStore(t, dir)
	ctx := ctxT(t)
	now := time.Now().UTC()
	uc := store.UserChannel{ID: "uch_1", UserID: "u", CardID: "im.notloaded", ChannelID: "cch_1", CreatedAt: now, UpdatedAt: now}
	if err := db.PutUserChannel(ctx, uc); err != nil {
		t.Fatal(err)
	}
	if _, err := db.OutboxEnqueue(ctx, delivery.Entry{Queue: DefaultOutboxQueue, Channel: uc.ID, MessageID: "amsg_1",
		Payload: []byte(`{"message_id":"amsg_1","text":"hi"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour), NextAttempt: now},
		1000, now); err != nil {
		t.Fatal(err)
	}
	th := newTestHostOn(t, db, dir, nil)
	eventually(t, "two attempts", func() bool {
		st, err := th.OutboxStats(ctx)
		return err == nil && st.Attempts >= 2
	})
	st, err := th.OutboxStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failures != 0 || st.Pending != 1 {
		t.Fatalf("outbox after attempts: pending %d, failures %d (last error %q); want the final pending",
			st.Pending, st.Failures, st.LastError)
	}
}
