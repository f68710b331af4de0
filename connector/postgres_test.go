package connector_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestPostgresStore runs sign-in, a side-effecting tool and durable
// publishing on PostgreSQL (XCONN_TEST_POSTGRES).
func TestPostgresStore(t *testing.T) {
	dsn := os.Getenv("XCONN_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("XCONN_TEST_POSTGRES is not set; skipping the PostgreSQL run")
	}
	t.Parallel()
	ctx := testCtx(t)
	db, err := store.Open(ctx, dsn, store.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cardID := "test.pg" + signurl.RandomID("")[:8]
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: db, CardID: cardID,
		Adjust: func(o *connector.Options) { o.AckTimeout = 300 * time.Millisecond }})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	arg := `{"connector_channel_id":"` + ch + `","text":"a"}`
	first := invoke(t, c, ch, sdkfixture.ToolSend, arg, "pg_call")
	again := invoke(t, c, ch, sdkfixture.ToolSend, arg, "pg_call")
	if string(first.Payload) != string(again.Payload) {
		t.Fatalf("idempotency on postgres: %s vs %s", first.Payload, again.Payload)
	}
	h, _ := f.Server.Channel(ch)
	if _, err := h.Publish(ctx, connector.UserMessage{MessageID: "pg-1", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	msg, err := c.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	ackMessage(t, c, msg, protocol.AckAccepted, nil)
	// Clean up the shared database.
	f.Close()
	_ = db.DeleteChannel(context.Background(), cardID, ch)
}
