package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestCatalog(t *testing.T) {
	eachDB(t, Options{MaxCatalog: 2}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		e := CatalogEntry{CardID: "im.x", BaseURL: "http://127.0.0.1:1", APIKey: "sk-secret", Card: []byte(`{}`), Health: "healthy", CreatedAt: ts0}
		must0(t, db.InsertCatalog(ctx, e))
		if err := db.InsertCatalog(ctx, e); !errors.Is(err, ErrConflict) {
			t.Fatalf("second insert: %v, want ErrConflict", err)
		}
		e.Health, e.APIKey, e.CreatedAt = "unhealthy", "", time.Time{}
		must0(t, db.UpdateCatalog(ctx, e))
		got, err := db.GetCatalog(ctx, "im.x")
		if err != nil || got.Health != "unhealthy" || got.APIKey != "" || !got.CreatedAt.Equal(ts0) || string(got.Card) != "{}" || got.Skill != nil {
			t.Fatalf("GetCatalog = %+v %v", got, err)
		}
		if err := db.UpdateCatalog(ctx, CatalogEntry{CardID: "nope"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update missing: %v", err)
		}
		must0(t, db.InsertCatalog(ctx, CatalogEntry{CardID: "im.a", APIKey: "k2"}))
		if err := db.InsertCatalog(ctx, CatalogEntry{CardID: "im.z"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("3rd entry: %v, want ErrLimit", err)
		}
		list, err := db.ListCatalog(ctx)
		if err != nil || len(list) != 2 || list[0].CardID != "im.a" || list[0].APIKey != "k2" {
			t.Fatalf("ListCatalog = %+v %v", list, err)
		}
		must0(t, db.DeleteCatalog(ctx, "im.a"))
		if _, err := db.GetCatalog(ctx, "im.a"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	})
}

func TestUserChannels(t *testing.T) {
	eachDB(t, Options{MaxUserChannels: 3}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for i, u := range []string{"alice", "bob", "alice"} {
			must0(t, db.PutUserChannel(ctx, UserChannel{ID: fmt.Sprint("u", i), UserID: u, CardID: "im.x",
				ChannelID: fmt.Sprint("ch", i), Authenticated: i == 0, CreatedAt: ts0.Add(time.Duration(i))}))
		}
		if err := db.PutUserChannel(ctx, UserChannel{ID: "dup", UserID: "alice", CardID: "im.x", ChannelID: "ch0"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate ownership: %v, want ErrConflict", err)
		}
		if err := db.PutUserChannel(ctx, UserChannel{ID: "u9", UserID: "carol", CardID: "im.x", ChannelID: "ch9"}); !errors.Is(err, ErrLimit) {
			t.Fatalf("4th record: %v, want ErrLimit", err)
		}
		// A reissued ChannelID keeps the stable ID.
		must0(t, db.PutUserChannel(ctx, UserChannel{ID: "u0", UserID: "alice", CardID: "im.x", ChannelID: "ch0b", Authenticated: true}))
		uc, err := db.FindUserChannel(ctx, "alice", "im.x", "ch0b")
		if err != nil || uc.ID != "u0" || !uc.Authenticated || !uc.CreatedAt.Equal(ts0) {
			t.Fatalf("FindUserChannel = %+v %v", uc, err)
		}
		alice, _ := db.ListUserChannels(ctx, "alice", "im.x")
		all, _ := db.ListUserChannels(ctx, "", "im.x")
		if len(alice) != 2 || alice[0].ID != "u0" || alice[1].ID != "u2" || len(all) != 3 {
			t.Fatalf("ListUserChannels: alice %+v, all %d", alice, len(all))
		}
		must0(t, db.DeleteUserChannel(ctx, "u1"))
		if _, err := db.GetUserChannel(ctx, "u1"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	})
}

func TestLease(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		now := ts0
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		// Two processes: two handles on one database.
		a := openDB(t, dsn, Options{Now: clock})
		b := openDB(t, dsn, Options{Now: clock})
		ctx := context.Background()
		ok, err := a.AcquireLease(ctx, "im.x", "A", time.Minute)
		if err != nil || !ok {
			t.Fatalf("A acquire = %v %v", ok, err)
		}
		if ok, _ := b.AcquireLease(ctx, "im.x", "B", time.Minute); ok {
			t.Fatal("B took a lease that A holds")
		}
		if ok, _ := a.AcquireLease(ctx, "im.x", "A", time.Minute); !ok {
			t.Fatal("A could not renew")
		}
		mu.Lock()
		now = now.Add(2 * time.Minute)
		mu.Unlock()
		if ok, _ := b.AcquireLease(ctx, "im.x", "B", time.Minute); !ok {
			t.Fatal("B could not take an expired lease")
		}
		must0(t, b.ReleaseLease(ctx, "im.x", "A")) // not the holder: no effect
		if ok, _ := a.AcquireLease(ctx, "im.x", "A", time.Minute); ok {
			t.Fatal("release by a non-holder freed the lease")
		}
		must0(t, b.ReleaseLease(ctx, "im.x", "B"))
		if ok, _ := a.AcquireLease(ctx, "im.x", "A", time.Minute); !ok {
			t.Fatal("A could not take a released lease")
		}
		// Racing acquirers: exactly one wins.
		var wins sync.WaitGroup
		var won sync.Map
		for i := range 8 {
			wins.Add(1)
			go func() {
				defer wins.Done()
				db := a
				if i%2 == 1 {
					db = b
				}
				if ok, err := db.AcquireLease(ctx, "race", fmt.Sprint("h", i), time.Minute); err == nil && ok {
					won.Store(i, true)
				} else if err != nil {
					t.Error(err)
				}
			}()
		}
		wins.Wait()
		n := 0
		won.Range(func(_, _ any) bool { n++; return true })
		if n != 1 {
			t.Fatalf("%d holders won the race, want 1", n)
		}
	})
}
