package connector

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestReadyStore checks Ready against a real store: ready once started,
// unready with ErrStoreUnavailable once the store is closed underneath,
// and ErrClosed after Close.
func TestReadyStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "c.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Store: db, DataDir: dir,
		Identity: Identity{CardID: "im.ready", Name: "Ready", Provider: "ready", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *Channel, *AssistantMessage) error { return nil })
	if err := srv.Ready(ctx); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("before Start: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Ready(ctx); err != nil {
		t.Fatalf("started: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Ready(ctx); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("store closed: %v, want ErrStoreUnavailable", err)
	}
	_ = srv.Close(ctx)
	if err := srv.Ready(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
