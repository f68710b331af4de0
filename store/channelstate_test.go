package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// stateVal is a value of n bytes (not all equal, so that a match in a raw
// column would be meaningful).
func stateVal(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

func TestChannelStateRoundTrip(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		must0(t, db.PutChannel(ctx, Channel{CardID: "im.x", ChannelID: "ch"}))
		must0(t, db.PutChannel(ctx, Channel{CardID: "im.x", ChannelID: "other"}))
		must0(t, db.PutChannel(ctx, Channel{CardID: "im.y", ChannelID: "ch"}))

		must0(t, db.PutChannelState(ctx, "im.x", "ch", "context_token", []byte("tok-1")))
		must0(t, db.PutChannelState(ctx, "im.x", "ch", "poll_offset", []byte("42")))
		must0(t, db.PutChannelState(ctx, "im.x", "ch", "context_token", []byte("tok-2"))) // overwrite
		must0(t, db.PutChannelState(ctx, "im.x", "ch", "empty", nil))
		must0(t, db.PutChannelState(ctx, "im.x", "ch", "ключ", []byte{0, 1, 2})) // any UTF-8 key, binary value

		if v, err := db.GetChannelState(ctx, "im.x", "ch", "context_token"); err != nil || string(v) != "tok-2" {
			t.Fatalf("Get context_token = %q %v, want tok-2", v, err)
		}
		if v, err := db.GetChannelState(ctx, "im.x", "ch", "empty"); err != nil || v == nil || len(v) != 0 {
			t.Fatalf("Get empty = %#v %v, want a non-nil empty value", v, err)
		}
		want := map[string][]byte{"context_token": []byte("tok-2"), "poll_offset": []byte("42"), "empty": {}, "ключ": {0, 1, 2}}
		if got, err := db.ListChannelState(ctx, "im.x", "ch"); err != nil || !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("List = %q %v, want %q", got, err, want)
		}
		// The state is per channel and per card.
		for _, c := range [][2]string{{"im.x", "other"}, {"im.y", "ch"}, {"im.z", "nope"}} {
			if _, err := db.GetChannelState(ctx, c[0], c[1], "context_token"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get in %v: %v, want ErrNotFound", c, err)
			}
			if got, err := db.ListChannelState(ctx, c[0], c[1]); err != nil || got == nil || len(got) != 0 {
				t.Errorf("List in %v = %v %v, want an empty map", c, got, err)
			}
		}

		must0(t, db.DeleteChannelState(ctx, "im.x", "ch", "poll_offset"))
		must0(t, db.DeleteChannelState(ctx, "im.x", "ch", "poll_offset")) // absent: no error
		if _, err := db.GetChannelState(ctx, "im.x", "ch", "poll_offset"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		if got, _ := db.ListChannelState(ctx, "im.x", "ch"); len(got) != 3 {
			t.Fatalf("List after Delete = %q, want 3 keys", got)
		}

		must0(t, db.PutChannelState(ctx, "im.x", "other", "k", []byte("v")))
		must0(t, db.ClearChannelState(ctx, "im.x", "ch"))
		if got, err := db.ListChannelState(ctx, "im.x", "ch"); err != nil || len(got) != 0 {
			t.Fatalf("List after Clear = %q %v, want empty", got, err)
		}
		if v, err := db.GetChannelState(ctx, "im.x", "other", "k"); err != nil || string(v) != "v" {
			t.Fatalf("Clear touched another channel: %q %v", v, err)
		}
		must0(t, db.ClearChannelState(ctx, "im.x", "ch")) // nothing left: no error

		// State belongs to an existing channel.
		if err := db.PutChannelState(ctx, "im.x", "nope", "k", []byte("v")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Put on a missing channel: %v, want ErrNotFound", err)
		}
		for name, err := range map[string]error{
			"get":    second(db.GetChannelState(ctx, "im.x", "ch", "")),
			"delete": db.DeleteChannelState(ctx, "im.x", "ch", ""),
		} {
			if !errors.Is(err, ErrChannelStateKey) {
				t.Errorf("%s of an empty key: %v, want ErrChannelStateKey", name, err)
			}
		}
	})
}

// TestChannelStateLimits fills a fresh channel per case with prefill, then
// puts one key: a refused Put must match the expected error and leave the
// state as it was.
func TestChannelStateLimits(t *testing.T) {
	type kv struct {
		key string
		n   int // value size
	}
	// full is a channel at exactly MaxChannelStateBytes: three keys of one
	// byte with a 16 KiB value, and "d" filling the rest.
	rest := MaxChannelStateBytes - 3*(1+MaxChannelStateValueBytes) - 1
	full := []kv{{"a", MaxChannelStateValueBytes}, {"b", MaxChannelStateValueBytes}, {"c", MaxChannelStateValueBytes}, {"d", rest}}
	var manyKeys []kv
	for i := range MaxChannelStateKeys {
		manyKeys = append(manyKeys, kv{fmt.Sprintf("k%02d", i), 10})
	}
	tests := []struct {
		name    string
		prefill []kv
		key     string
		n       int
		wantErr error  // nil: the Put succeeds
		bound   string // the ChannelStateLimitError's bound, if any
	}{
		{name: "empty key", key: "", n: 1, wantErr: ErrChannelStateKey},
		{name: "key not UTF-8", key: "k\xff", n: 1, wantErr: ErrChannelStateKey},
		{name: "key with NUL", key: "k\x00j", n: 1, wantErr: ErrChannelStateKey},
		{name: "longest key", key: strings.Repeat("k", MaxChannelStateKeyBytes), n: 1},
		{name: "key too long", key: strings.Repeat("k", MaxChannelStateKeyBytes+1), n: 1,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateKeyBytes},
		{name: "key too long in bytes", key: strings.Repeat("é", MaxChannelStateKeyBytes/2) + "k", n: 1,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateKeyBytes},
		{name: "empty value", key: "k", n: 0},
		{name: "largest value", key: "k", n: MaxChannelStateValueBytes},
		{name: "value too large", key: "k", n: MaxChannelStateValueBytes + 1,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateValueBytes},
		{name: "last key", prefill: manyKeys[:MaxChannelStateKeys-1], key: "new", n: 10},
		{name: "one key too many", prefill: manyKeys, key: "new", n: 10,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateKeys},
		{name: "overwrite when keys are full", prefill: manyKeys, key: "k05", n: 100},
		{name: "total at the bound", prefill: full[:3], key: "d", n: rest},
		{name: "total one byte over", prefill: full[:3], key: "d", n: rest + 1,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateBytes},
		{name: "new key when total is full", prefill: full, key: "e", n: 0,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateBytes},
		{name: "overwrite smaller when total is full", prefill: full, key: "a", n: 1},
		{name: "overwrite same size when total is full", prefill: full, key: "a", n: MaxChannelStateValueBytes},
		{name: "overwrite larger is measured by the new size", prefill: full, key: "d", n: rest + 1,
			wantErr: ErrChannelStateFull, bound: BoundChannelStateBytes},
	}
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ch := tt.name
				must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: ch}))
				for _, p := range tt.prefill {
					must0(t, db.PutChannelState(ctx, "c", ch, p.key, stateVal(p.n)))
				}
				before, err := db.ListChannelState(ctx, "c", ch)
				must0(t, err)
				err = db.PutChannelState(ctx, "c", ch, tt.key, stateVal(tt.n))
				after, lerr := db.ListChannelState(ctx, "c", ch)
				must0(t, lerr)
				if tt.wantErr == nil {
					if err != nil {
						t.Fatalf("Put(%d-byte key, %d-byte value): %v", len(tt.key), tt.n, err)
					}
					if v, err := db.GetChannelState(ctx, "c", ch, tt.key); err != nil || !bytes.Equal(v, stateVal(tt.n)) {
						t.Fatalf("Get after Put: %d bytes, %v; want %d", len(v), err, tt.n)
					}
					return
				}
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Put: %v, want %v", err, tt.wantErr)
				}
				if !maps.EqualFunc(before, after, bytes.Equal) {
					t.Errorf("a refused Put changed the state: %d keys before, %d after", len(before), len(after))
				}
				if tt.bound == "" {
					return
				}
				var le *ChannelStateLimitError
				if !errors.As(err, &le) || le.Bound != tt.bound || le.Got <= le.Limit || !errors.Is(err, ErrLimit) {
					t.Fatalf("Put: %#v (%v), want a ChannelStateLimitError on %q that matches ErrLimit", le, err, tt.bound)
				}
			})
		}
	})
}

func TestChannelStateDeletedWithChannel(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for _, ch := range []string{"ch", "keep"} {
			must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: ch}))
			must0(t, db.PutChannelState(ctx, "c", ch, "k1", []byte("v1")))
			must0(t, db.PutChannelState(ctx, "c", ch, "k2", []byte("v2")))
		}
		must0(t, db.DeleteChannel(ctx, "c", "ch"))
		if n := stateRows(t, db, "c", "ch"); n != 0 {
			t.Fatalf("%d state rows after DeleteChannel, want 0", n)
		}
		if n := stateRows(t, db, "c", "keep"); n != 2 {
			t.Fatalf("DeleteChannel touched another channel's state: %d rows, want 2", n)
		}
		// A channel created again under the same id starts empty.
		must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "ch"}))
		if _, err := db.GetChannelState(ctx, "c", "ch", "k1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get on a recreated channel: %v, want ErrNotFound", err)
		}
	})
}

// stateRows counts the raw state rows of a channel.
func stateRows(t *testing.T, db *DB, cardID, channelID string) int {
	t.Helper()
	var n int
	if err := db.r.QueryRowContext(context.Background(), db.q(`SELECT COUNT(*) FROM channel_state WHERE card_id = ? AND channel_id = ?`),
		cardID, channelID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestChannelStateEncryptedAtRest(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		const secret = "context-token-5e7a3f9b"
		must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "ch"}))
		must0(t, db.PutChannelState(ctx, "c", "ch", "token", []byte(secret)))
		raw := func(key string) []byte {
			t.Helper()
			var b []byte
			if err := db.r.QueryRowContext(ctx, db.q(`SELECT value FROM channel_state WHERE state_key = ?`), key).Scan(&b); err != nil {
				t.Fatal(err)
			}
			return b
		}
		a := raw("token")
		if len(a) == 0 || bytes.Contains(a, []byte(secret)) {
			t.Fatalf("raw value holds the plaintext (%d bytes)", len(a))
		}
		must0(t, db.PutChannelState(ctx, "c", "ch", "token", []byte(secret)))
		if bytes.Equal(a, raw("token")) {
			t.Error("same ciphertext twice: nonce not random")
		}
		// A ciphertext moved to another key does not decrypt.
		must0(t, db.PutChannelState(ctx, "c", "ch", "other", []byte("x")))
		if _, err := db.w.ExecContext(ctx, db.q(`UPDATE channel_state SET value = ? WHERE state_key = 'other'`), a); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetChannelState(ctx, "c", "ch", "other"); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("ciphertext copied to another key: %v, want a decryption error without the secret", err)
		}
		if _, err := db.ListChannelState(ctx, "c", "ch"); err == nil {
			t.Error("List decrypted a ciphertext copied to another key")
		}
	})
}

// TestChannelStateConcurrentBound races Puts of distinct keys on one
// channel from two handles (two processes) on one database: exactly as many
// succeed as the bound allows, the rest fail with ErrChannelStateFull, and
// nothing is stored beyond the bound. A DeleteChannel racing with Puts
// leaves no state behind.
func TestChannelStateConcurrentBound(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		a := openDB(t, dsn, Options{})
		b := openDB(t, dsn, Options{})
		ctx := context.Background()
		for _, ch := range []string{"keys", "bytes", "gone"} {
			must0(t, a.PutChannel(ctx, Channel{CardID: "c", ChannelID: ch}))
		}
		// race runs n Puts of distinct keys with vsize-byte values on ch,
		// half on each handle, and counts the outcomes.
		race := func(ch string, n, vsize int, also func()) (ok, full, missing int) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i := range n {
				db := a
				if i%2 == 1 {
					db = b
				}
				wg.Go(func() {
					err := db.PutChannelState(ctx, "c", ch, fmt.Sprintf("k%03d", i), stateVal(vsize))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, ErrChannelStateFull):
						full++
					case errors.Is(err, ErrNotFound):
						missing++
					default:
						t.Error(err)
					}
				})
			}
			if also != nil {
				wg.Go(also)
			}
			wg.Wait()
			return ok, full, missing
		}

		const n = 2*MaxChannelStateKeys + 8
		if ok, full, _ := race("keys", n, 8, nil); ok != MaxChannelStateKeys || full != n-MaxChannelStateKeys {
			t.Errorf("count bound: %d stored, %d refused; want %d and %d", ok, full, MaxChannelStateKeys, n-MaxChannelStateKeys)
		}
		if got := stateRows(t, a, "c", "keys"); got != MaxChannelStateKeys {
			t.Errorf("%d keys stored, want %d", got, MaxChannelStateKeys)
		}

		// Values of 8,000 bytes with 4-byte keys: 8 fit in 64 KiB.
		const vsize, fit = 8000, MaxChannelStateBytes / (4 + 8000)
		if ok, full, _ := race("bytes", 40, vsize, nil); ok != fit || full != 40-fit {
			t.Errorf("size bound: %d stored, %d refused; want %d and %d", ok, full, fit, 40-fit)
		}
		var total int
		if err := a.r.QueryRowContext(ctx, a.q(`SELECT COALESCE(CAST(SUM(size) AS BIGINT), 0) FROM channel_state WHERE card_id = ? AND channel_id = ?`),
			"c", "bytes").Scan(&total); err != nil {
			t.Fatal(err)
		}
		if list, err := b.ListChannelState(ctx, "c", "bytes"); err != nil || len(list) != fit || total > MaxChannelStateBytes {
			t.Errorf("stored %d keys, %d bytes (%v); want %d keys, at most %d bytes", len(list), total, err, fit, MaxChannelStateBytes)
		}

		ok, _, missing := race("gone", 32, 8, func() {
			if err := b.DeleteChannel(ctx, "c", "gone"); err != nil {
				t.Error(err)
			}
		})
		if ok+missing != 32 {
			t.Errorf("Puts racing a DeleteChannel: %d stored, %d missing; want 32 in all", ok, missing)
		}
		if _, err := a.GetChannel(ctx, "c", "gone"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("channel after DeleteChannel: %v", err)
		}
		if got := stateRows(t, a, "c", "gone"); got != 0 {
			t.Errorf("%d state rows outlived their channel", got)
		}
	})
}

// TestMigration4AddsChannelState upgrades a database at schema 3 holding a
// channel: after the upgrade the channel is intact and can hold state.
func TestMigration4AddsChannelState(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		driver, dir, raw := "sqlite", "migrations/sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")
		if !strings.HasPrefix(dsn, "sqlite:") {
			driver, dir, raw = "pgx", "migrations/postgres", dsn
		}
		old, err := openRaw(driver, raw)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		list, err := migrations(dir)
		if err != nil {
			t.Fatal(err)
		}
		latest := list[len(list)-1].version
		if !slices.ContainsFunc(list, func(m migration) bool { return m.version == 4 && m.name == "0004_channel_state.sql" }) {
			t.Fatalf("no migration 0004_channel_state.sql in %s", dir)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if driver == "pgx" {
				q = (&DB{dialect: dialectPostgres}).q(q)
			}
			if _, err := old.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec(`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
		for _, m := range list {
			if m.version > 3 {
				break
			}
			exec(m.sql)
			exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, m.version, m.name, 1)
		}
		// A channel written by the previous schema (no binding).
		exec(`INSERT INTO channels (`+channelCols+`) VALUES ('c', 'ch', 'conn', 'authenticated', 'qr', NULL, 'Ann', 'a…', ?, ?)`, ts(ts0), ts(ts0))

		db := openDB(t, dsn, Options{})
		if v, err := db.SchemaVersion(ctx); err != nil || v != latest {
			t.Fatalf("schema version %d (%v), want %d", v, err, latest)
		}
		ch, err := db.GetChannel(ctx, "c", "ch")
		if err != nil || ch.Status != "authenticated" || ch.DisplayName != "Ann" || !ch.CreatedAt.Equal(ts0) {
			t.Fatalf("channel after upgrade = %+v %v", ch, err)
		}
		must0(t, db.PutChannelState(ctx, "c", "ch", "offset", []byte("7")))
		if v, err := db.GetChannelState(ctx, "c", "ch", "offset"); err != nil || string(v) != "7" {
			t.Fatalf("state after upgrade = %q %v", v, err)
		}
		must0(t, db.DeleteChannel(ctx, "c", "ch"))
		if n := stateRows(t, db, "c", "ch"); n != 0 {
			t.Fatalf("%d state rows after DeleteChannel", n)
		}
		// Opening again applies nothing.
		db2 := openDB(t, dsn, Options{})
		if v, err := db2.SchemaVersion(ctx); err != nil || v != latest {
			t.Fatalf("schema version on reopen %d (%v), want %d", v, err, latest)
		}
	})
}
