package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// The background checkpointer copies committed pages into the database
// file well before the writer's own automatic checkpoint (4,096 pages of
// WAL) would: a small write reaches the file.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "xconn.db")
	db := openDB(t, "sqlite:"+path, Options{})
	marker := []byte("checkpoint-marker-7f3a9c")
	at := time.Unix(1_800_000_000, 0)
	e := delivery.Entry{Queue: "q", Channel: "c", MessageID: "m", Payload: marker, CreatedAt: at, ExpiresAt: at.Add(time.Hour), NextAttempt: at}
	if _, err := db.OutboxEnqueue(context.Background(), e, 0, at); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, marker) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the committed entry is still only in the WAL: nothing was checkpointed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
