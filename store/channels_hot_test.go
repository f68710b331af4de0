package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// insertWith inserts channel id of card im.x in one batch with h (nil:
// by the statement's text).
func insertWith(ctx context.Context, db *DB, h *channelHot, id string) error {
	st := h.insertStmt(ctx, db.w)
	return db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := execInsertChannel(ctx, tx, st, "im.x", id, "c", "created", "", []byte(nil), "", "", int64(1), int64(1))
		return err
	})
}

// TestChannelHotInsert checks that the prepared channel insert stores the
// same rows as the insert by text, reports a taken id, and that a closed
// channelHot falls back to the text.
func TestChannelHotInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, "sqlite:"+filepath.Join(t.TempDir(), "xconn.db"), Options{})
	var h channelHot
	for i, hot := range []*channelHot{nil, &h, &h} {
		if err := insertWith(ctx, db, hot, fmt.Sprint("cch_", i)); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if h.insert == nil {
		t.Fatal("the insert was not prepared")
	}
	if err := insertWith(ctx, db, &h, "cch_1"); err == nil {
		t.Fatal("a taken id was inserted again")
	}
	h.close()
	if err := insertWith(ctx, db, &h, "cch_3"); err != nil {
		t.Fatalf("insert after close: %v", err)
	}
	chs, err := db.ListChannels(ctx, "im.x", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 4 {
		t.Fatalf("%d channels stored, want 4: %+v", len(chs), chs)
	}
	for i, ch := range chs {
		if ch.ChannelID != fmt.Sprint("cch_", i) || ch.ConnectorID != "c" || ch.Status != "created" {
			t.Errorf("channel %d = %+v", i, ch)
		}
	}
}

// BenchmarkChannelInsert compares the channel insert by text with the
// prepared one: one op is 64 inserts in one group-committed transaction,
// the shape of a burst of channel.open.
func BenchmarkChannelInsert(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		hot  bool
	}{{"text", false}, {"prepared", true}} {
		b.Run(tc.name, func(b *testing.B) {
			db, err := Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "xconn.db"), Options{Key: testKey})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			var h *channelHot
			if tc.hot {
				h = &channelHot{}
				defer h.close()
			}
			st := h.insertStmt(ctx, db.w)
			i := 0
			for b.Loop() {
				err := db.batch(ctx, func(ctx context.Context, tx *sql.Tx) error {
					for range 64 {
						i++
						if _, err := execInsertChannel(ctx, tx, st, "im.x", fmt.Sprint("cch_", i), "c", "created", "",
							[]byte(nil), "", "", int64(1), int64(1)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
