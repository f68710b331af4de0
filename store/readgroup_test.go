package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/delivery"
)

// Callers that arrive while a read runs wait for it and are then read
// together, by one statement run by one of them; a lone caller reads
// alone; a failed combined statement falls back to one read per caller.
func TestReadGroupCombines(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("combined_fails=%v", fail), func(t *testing.T) {
			release := make(chan struct{})
			var ones, reads atomic.Int32
			var readKeys [][]int
			var mu sync.Mutex
			g := readGroup[int, string]{
				one: func(k int) (string, bool, error) {
					if ones.Add(1) == 1 {
						<-release // the first read holds the group busy
					}
					return fmt.Sprint("v", k), k%2 == 0, nil
				},
				read: func(keys []int) (map[int]string, error) {
					reads.Add(1)
					mu.Lock()
					readKeys = append(readKeys, append([]int(nil), keys...))
					mu.Unlock()
					if fail {
						return nil, errors.New("refused")
					}
					m := map[int]string{}
					for _, k := range keys {
						if k%2 == 0 {
							m[k] = fmt.Sprint("v", k)
						}
					}
					return m, nil
				},
			}
			type res struct {
				v  string
				ok bool
			}
			got := make([]res, 10)
			var wg sync.WaitGroup
			wg.Go(func() { v, ok, _ := g.get(0); got[0] = res{v, ok} })
			// Wait until the first read runs, then queue nine more (two
			// of them the same key).
			for ones.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			for i := 1; i < 10; i++ {
				k := i
				if i == 9 {
					k = 8
				}
				wg.Go(func() { v, ok, _ := g.get(k); got[i] = res{v, ok} })
			}
			for {
				g.mu.Lock()
				n := len(g.waiting)
				g.mu.Unlock()
				if n == 9 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			close(release)
			wg.Wait()
			for i, r := range got {
				k := i
				if i == 9 {
					k = 8
				}
				want := res{fmt.Sprint("v", k), k%2 == 0}
				if !want.ok {
					want.v = ""
				}
				if r.v != want.v && want.ok || r.ok != want.ok {
					t.Errorf("get(%d) = %+v, want %+v", k, r, want)
				}
			}
			if reads.Load() != 1 || len(readKeys[0]) != 8 {
				t.Errorf("combined reads %d of keys %v, want one of the 8 distinct waiting keys", reads.Load(), readKeys)
			}
			wantOnes := int32(1)
			if fail {
				wantOnes = 10 // the first, then each waiting call alone
			}
			if ones.Load() != wantOnes {
				t.Errorf("one-row reads %d, want %d", ones.Load(), wantOnes)
			}
			if g.busy || len(g.waiting) != 0 {
				t.Errorf("group not idle after the reads: busy %v, %d waiting", g.busy, len(g.waiting))
			}
		})
	}
}

// The combined statements of the inbox lookup and the next-entry read
// return what the one-row statements return, on both backends.
func TestCombinedReadStatements(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		for i := range 3 {
			r := delivery.InboxRecord{Queue: "in", Channel: "c\"" + fmt.Sprint(i), MessageID: "m" + fmt.Sprint(i), Hash: "h" + fmt.Sprint(i), At: at.Add(time.Duration(i) * time.Second)}
			if _, ins, err := db.InboxPut(ctx, r, 0); err != nil || !ins {
				t.Fatalf("put: %v %v", ins, err)
			}
		}
		var keys []inboxKey
		for i := range 5 { // two absent
			keys = append(keys, inboxKey{"in", "c\"" + fmt.Sprint(i), "m" + fmt.Sprint(i)})
		}
		got, err := db.inGet.read(keys)
		if err != nil {
			t.Fatalf("combined inbox read: %v", err)
		}
		for _, k := range keys {
			want, wok, err := db.inGet.one(k)
			if err != nil {
				t.Fatal(err)
			}
			g, gok := got[k]
			if gok != wok || g.Hash != want.Hash || !g.At.Equal(want.At) || g.MessageID != want.MessageID {
				t.Errorf("%v: combined %+v %v, one-row %+v %v", k, g, gok, want, wok)
			}
		}

		var seqs []int64
		for i, k := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"a", "a3"}} {
			r := enqueueT(t, db, k[0], k[1], at.Add(time.Duration(i)*time.Second), 0)
			seqs = append(seqs, r.Entry.Seq)
		}
		after := []afterKey{{"q", "a", 0}, {"q", "a", seqs[0]}, {"q", "a", seqs[3]}, {"q", "b", 0}, {"q", "none", 0}}
		ents, err := db.obAfter.read(after)
		if err != nil {
			t.Fatalf("combined after read: %v", err)
		}
		for _, k := range after {
			want, wok, err := db.obAfter.one(k)
			if err != nil {
				t.Fatal(err)
			}
			g, gok := ents[k]
			if gok != wok || g.Seq != want.Seq || g.MessageID != want.MessageID || string(g.Payload) != string(want.Payload) || !g.ExpiresAt.Equal(want.ExpiresAt) {
				t.Errorf("%v: combined %+v %v, one-row %+v %v", k, g, gok, want, wok)
			}
		}
		if e := ents[afterKey{"q", "a", seqs[0]}]; e.MessageID != "a2" {
			t.Errorf("after a1: %q, want a2", e.MessageID)
		}
	})
}

// Many concurrent lookups through the public methods get their own
// answers (run with -race).
func TestCombinedReadsConcurrent(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		for i := range 32 {
			r := delivery.InboxRecord{Queue: "in", Channel: fmt.Sprint("c", i%4), MessageID: fmt.Sprint("m", i), Hash: fmt.Sprint("h", i), At: at}
			if _, _, err := db.InboxPut(ctx, r, 0); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for j := range 50 {
					i := (g*7 + j) % 40 // 32..39 are absent
					r, ok, err := db.InboxGet(ctx, "in", fmt.Sprint("c", i%4), fmt.Sprint("m", i))
					if err != nil || ok != (i < 32) || ok && r.Hash != fmt.Sprint("h", i) {
						t.Errorf("get m%d: %+v %v %v", i, r, ok, err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
