package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func memoryData(t *testing.T, db *DB, conv string) []string {
	t.Helper()
	list, err := db.ListMemory(context.Background(), conv)
	if err != nil {
		t.Fatalf("ListMemory: %v", err)
	}
	var out []string
	for i, e := range list {
		if i > 0 && e.Seq <= list[i-1].Seq {
			t.Fatalf("seq %d after %d", e.Seq, list[i-1].Seq)
		}
		out = append(out, string(e.Data))
	}
	return out
}

func TestMemoryAppendTrim(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if got := memoryData(t, db, "uc_1"); len(got) != 0 {
			t.Fatalf("new conversation: %q", got)
		}
		if err := db.AppendMemory(ctx, "uc_1", [][]byte{[]byte("a"), []byte("b"), []byte("c")}, 3, 100); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendMemory(ctx, "uc_1", [][]byte{[]byte("d")}, 3, 100); err != nil {
			t.Fatal(err)
		}
		if got := memoryData(t, db, "uc_1"); !slices.Equal(got, []string{"b", "c", "d"}) {
			t.Fatalf("count window: %q", got)
		}
		// The byte window drops the oldest until the rest fits.
		if err := db.AppendMemory(ctx, "uc_1", [][]byte{bytes.Repeat([]byte("e"), 8)}, 10, 10); err != nil {
			t.Fatal(err)
		}
		if got := memoryData(t, db, "uc_1"); !slices.Equal(got, []string{"c", "d", "eeeeeeee"}) {
			t.Fatalf("byte window: %q", got)
		}
		// Other conversations are untouched; an empty entry is kept.
		if err := db.AppendMemory(ctx, "uc_2", [][]byte{nil}, 0, 0); err != nil {
			t.Fatal(err)
		}
		if got := memoryData(t, db, "uc_2"); len(got) != 1 || got[0] != "" {
			t.Fatalf("uc_2: %q", got)
		}
		// Too large: refused whole.
		err := db.AppendMemory(ctx, "uc_1", [][]byte{[]byte("f"), bytes.Repeat([]byte("g"), 11)}, 10, 10)
		if !errors.Is(err, ErrMemoryEntryTooLarge) || !errors.Is(err, ErrLimit) {
			t.Fatalf("oversized entry: %v", err)
		}
		if err := db.AppendMemory(ctx, "uc_1", [][]byte{make([]byte, MaxMemoryEntryBytes+1)}, 0, 0); !errors.Is(err, ErrMemoryEntryTooLarge) {
			t.Fatalf("entry over the hard bound: %v", err)
		}
		if got := memoryData(t, db, "uc_1"); len(got) != 3 {
			t.Fatalf("after refusals: %q", got)
		}
		for _, bad := range []string{"", "a\x00b", "\xff", string(make([]byte, MaxMemoryConversationBytes+1))} {
			if err := db.AppendMemory(ctx, bad, [][]byte{[]byte("x")}, 0, 0); err == nil {
				t.Fatalf("conversation key %q accepted", bad)
			}
		}
		if err := db.ClearMemory(ctx, "uc_1"); err != nil {
			t.Fatal(err)
		}
		if got := memoryData(t, db, "uc_1"); len(got) != 0 {
			t.Fatalf("after clear: %q", got)
		}
	})
}

// The window holds under concurrent appends to one conversation.
func TestMemoryConcurrentAppends(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 10 {
					if err := db.AppendMemory(ctx, "uc", [][]byte{fmt.Appendf(nil, "%d-%d", g, i)}, 5, 0); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if got := memoryData(t, db, "uc"); len(got) != 5 {
			t.Fatalf("%d entries, want 5: %q", len(got), got)
		}
	})
}

// Memory is encrypted at rest, survives a reopen and goes with its user channel.
func TestMemoryPersistsAndFollowsChannel(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := openDB(t, dsn, Options{})
		if err := db.PutUserChannel(ctx, UserChannel{ID: "uc_9", UserID: "u", CardID: "c", ChannelID: "ch"}); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendMemory(ctx, "uc_9", [][]byte{[]byte("memory-canary-4411")}, 0, 0); err != nil {
			t.Fatal(err)
		}
		var raw []byte
		if err := db.r.QueryRowContext(ctx, `SELECT data FROM conversation_memory`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("memory-canary-4411")) {
			t.Fatal("memory stored in plaintext")
		}
		db.Close()
		db = openDB(t, dsn, Options{})
		if got := memoryData(t, db, "uc_9"); !slices.Equal(got, []string{"memory-canary-4411"}) {
			t.Fatalf("after reopen: %q", got)
		}
		if err := db.DeleteUserChannel(ctx, "uc_9"); err != nil {
			t.Fatal(err)
		}
		if got := memoryData(t, db, "uc_9"); len(got) != 0 {
			t.Fatalf("after DeleteUserChannel: %q", got)
		}
	})
}
