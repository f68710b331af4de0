package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestPutChannelLimitConcurrent checks the MaxChannels bound when many new
// channels are put at once (the writes share group-committed transactions
// on SQLite), with rows of other cards around and rowid gaps left by
// deletions, so that both the MAX(rowid) shortcut and the exact count
// decide.
func TestPutChannelLimitConcurrent(t *testing.T) {
	tests := []struct {
		name       string
		max        int
		others     int  // channels of another card, put first
		deleted    int  // channels of the card put and deleted first
		existing   int  // channels of the card put first and kept
		concurrent int  // new channels of the card put at once
		create     bool // with CreateChannel rather than PutChannel
	}{
		{name: "far below the bound", max: 1000, concurrent: 64},
		{name: "exactly reaching it", max: 64, concurrent: 64},
		{name: "beyond it", max: 20, concurrent: 64},
		{name: "beyond it with other cards", max: 20, others: 15, concurrent: 64},
		{name: "beyond it after deletions", max: 20, deleted: 25, existing: 5, concurrent: 64},
		{name: "full before", max: 10, existing: 10, concurrent: 16},
		{name: "create, far below the bound", max: 1000, concurrent: 64, create: true},
		{name: "create, beyond it with other cards", max: 20, others: 15, concurrent: 64, create: true},
		{name: "create, beyond it after deletions", max: 20, deleted: 25, existing: 5, concurrent: 64, create: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eachDB(t, Options{MaxChannels: tc.max}, func(t *testing.T, db *DB) {
				ctx := context.Background()
				put := func(card, id string) error {
					return db.PutChannel(ctx, Channel{CardID: card, ChannelID: id, ConnectorID: "c", Status: "created"})
				}
				for i := range tc.others {
					if err := put("other", fmt.Sprint("o", i)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range tc.deleted {
					id := fmt.Sprint("d", i)
					if err := put("im.x", id); err != nil {
						t.Fatal(err)
					}
					if err := db.DeleteChannel(ctx, "im.x", id); err != nil {
						t.Fatal(err)
					}
				}
				for i := range tc.existing {
					if err := put("im.x", fmt.Sprint("e", i)); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				errs := make([]error, tc.concurrent)
				for i := range tc.concurrent {
					wg.Go(func() {
						if tc.create {
							errs[i] = db.CreateChannel(ctx, Channel{CardID: "im.x", ChannelID: fmt.Sprint("n", i), ConnectorID: "c", Status: "created"})
							return
						}
						errs[i] = put("im.x", fmt.Sprint("n", i))
					})
				}
				wg.Wait()
				ok := 0
				for _, err := range errs {
					switch {
					case err == nil:
						ok++
					case !errors.Is(err, ErrLimit):
						t.Fatalf("put: %v", err)
					}
				}
				want := min(tc.concurrent, tc.max-tc.existing)
				if ok != want {
					t.Fatalf("%d new channels stored, want %d", ok, want)
				}
				all, err := db.ListChannels(ctx, "im.x", "")
				if err != nil || len(all) != tc.existing+want {
					t.Fatalf("ListChannels: %d channels, %v; want %d", len(all), err, tc.existing+want)
				}
				// Updating a channel at the bound still works.
				if len(all) > 0 {
					ch := all[0]
					ch.Status = "expired"
					if err := db.PutChannel(ctx, ch); err != nil {
						t.Fatalf("update at the bound: %v", err)
					}
				}
			})
		})
	}
}

// TestCreateChannel checks that CreateChannel stores a new channel as
// PutChannel does and refuses a taken id, also at the bound.
func TestCreateChannel(t *testing.T) {
	eachDB(t, Options{MaxChannels: 2}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		ch := Channel{CardID: "im.x", ChannelID: "ch0", ConnectorID: "c0", Status: "created", Binding: []byte("secret"), CreatedAt: ts0}
		if err := db.CreateChannel(ctx, ch); err != nil {
			t.Fatal(err)
		}
		got, err := db.GetChannel(ctx, "im.x", "ch0")
		if err != nil || got.ConnectorID != "c0" || string(got.Binding) != "secret" || !got.CreatedAt.Equal(ts0) || got.UpdatedAt.IsZero() {
			t.Fatalf("GetChannel = %+v %v", got, err)
		}
		if err := db.CreateChannel(ctx, ch); !errors.Is(err, ErrConflict) {
			t.Fatalf("second create: %v, want ErrConflict", err)
		}
		if err := db.CreateChannel(ctx, Channel{CardID: "im.x", ChannelID: "ch1"}); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateChannel(ctx, ch); !errors.Is(err, ErrConflict) {
			t.Fatalf("create of a taken id at the bound: %v, want ErrConflict", err)
		}
		if err := db.CreateChannel(ctx, Channel{CardID: "im.x", ChannelID: "ch2"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("3rd channel: %v, want ErrLimit", err)
		}
	})
}

// BenchmarkCreateChannel measures creating channels on SQLite one at a
// time and from parallel goroutines (group committed).
func BenchmarkCreateChannel(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			db, err := Open(context.Background(), "sqlite:"+b.TempDir()+"/xconn.db", Options{Key: testKey})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			var n atomic.Int64
			create := func() {
				id := fmt.Sprint("cch_", n.Add(1))
				if err := db.CreateChannel(ctx, Channel{CardID: "im.x", ChannelID: id, ConnectorID: "conn_1", Status: "created"}); err != nil {
					b.Error(err)
				}
			}
			b.ReportAllocs()
			if !parallel {
				for b.Loop() {
					create()
				}
				return
			}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					create()
				}
			})
		})
	}
}
