package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		dsn  string
		opts Options
		want string
	}{
		{"unknown scheme", "mysql://x", Options{Key: testKey}, "unsupported DSN"},
		{"empty", "", Options{Key: testKey}, "unsupported DSN"},
		{"sqlite without path", "sqlite:", Options{Key: testKey}, "file path"},
		{"sqlite with query", "sqlite:/tmp/x.db?mode=memory", Options{Key: testKey}, "file path"},
		{"no key", "sqlite:" + filepath.Join(t.TempDir(), "a.db"), Options{}, "no secret key"},
		{"short key", "sqlite:" + filepath.Join(t.TempDir(), "a.db"), Options{Key: []byte("short")}, "32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(ctx, tt.dsn, tt.opts)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite:" + filepath.Join(dir, "x.db")
	db := openDB(t, dsn, Options{DataDir: dir})
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "ch", Binding: []byte("tok")}))
	db.Close()

	// Reopened with the same key file, the secret decrypts.
	db2 := openDB(t, dsn, Options{DataDir: dir})
	ch, err := db2.GetChannel(ctx, "c", "ch")
	if err != nil || string(ch.Binding) != "tok" {
		t.Fatalf("after reopen: %q %v", ch.Binding, err)
	}
	db2.Close()

	// A key given by flag overrides the file: the secret does not decrypt.
	db3 := openDB(t, dsn, Options{DataDir: dir, Key: testKey})
	if _, err := db3.GetChannel(ctx, "c", "ch"); err == nil || strings.Contains(err.Error(), "tok") {
		t.Fatalf("wrong key: %v, want a decryption error without the secret", err)
	}

	// A key file readable by others is refused.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, KeyFile), bytes.Repeat([]byte("ab"), 32), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir2, KeyFile), 0o644)
	if _, err := Open(ctx, "sqlite:"+filepath.Join(dir2, "x.db"), Options{DataDir: dir2}); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("loose key file: %v", err)
	}
}

// TestSecretsEncryptedAtRest reads the raw columns and checks that no
// plaintext secret is stored, on both backends.
func TestSecretsEncryptedAtRest(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		const binding, state, apiKey = "bot-token-7f3a9c", "qr-state-4b2e1d", "sk-api-key-9d8c7b"
		must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "ch", Binding: []byte(binding)}))
		must0(t, db.PutAuthSession(ctx, AuthSession{CardID: "c", ID: "s", State: []byte(state)}))
		must0(t, db.InsertCatalog(ctx, CatalogEntry{CardID: "c", APIKey: apiKey}))
		for _, c := range []struct{ query, secret string }{
			{`SELECT binding FROM channels`, binding},
			{`SELECT state FROM auth_sessions`, state},
			{`SELECT api_key FROM catalog`, apiKey},
		} {
			var raw []byte
			if err := db.r.QueryRowContext(ctx, c.query).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if len(raw) == 0 || bytes.Contains(raw, []byte(c.secret)) {
				t.Errorf("%s holds the plaintext (%d bytes)", c.query, len(raw))
			}
		}
		// Two writes of one secret differ (random nonce).
		var a, b []byte
		db.r.QueryRowContext(ctx, `SELECT binding FROM channels`).Scan(&a)
		must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "ch", Binding: []byte(binding)}))
		db.r.QueryRowContext(ctx, `SELECT binding FROM channels`).Scan(&b)
		if bytes.Equal(a, b) {
			t.Error("same ciphertext twice: nonce not random")
		}
		// A ciphertext moved to another row does not decrypt.
		must0(t, db.PutChannel(ctx, Channel{CardID: "c", ChannelID: "other", Binding: []byte("x")}))
		if _, err := db.w.ExecContext(ctx, db.q(`UPDATE channels SET binding = ? WHERE channel_id = 'other'`), b); err != nil {
			t.Fatal(err)
		}
		if _, err := db.GetChannel(ctx, "c", "other"); err == nil {
			t.Error("ciphertext copied to another row decrypted")
		}
		got, err := db.GetCatalog(ctx, "c")
		if err != nil || got.APIKey != apiKey {
			t.Fatalf("GetCatalog: %q %v", got.APIKey, err)
		}
	})
}

// TestMigrationsConcurrentOpen starts several opens of one database at
// once: all succeed and the schema is migrated once.
func TestMigrationsConcurrentOpen(t *testing.T) {
	backends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make([]error, 4)
		dbs := make([]*DB, 4)
		for i := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dbs[i], errs[i] = Open(ctx, dsn, Options{Key: testKey})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("open %d: %v", i, err)
			}
			defer dbs[i].Close()
		}
		var n int
		if err := dbs[0].r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		list, _ := migrations(map[dialect]string{dialectSQLite: "migrations/sqlite", dialectPostgres: "migrations/postgres"}[dbs[0].dialect])
		if v, err := dbs[0].SchemaVersion(ctx); err != nil || n != len(list) || v != list[len(list)-1].version {
			t.Fatalf("schema_migrations rows %d version %d (%v), want %d", n, v, err, len(list))
		}
	})
}

func TestNotFoundIsTyped(t *testing.T) {
	eachDB(t, Options{}, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for _, err := range []error{
			second(db.GetChannel(ctx, "c", "x")), second(db.GetInstance(ctx, "c", "x")),
			second(db.GetAuthSession(ctx, "c", "x")), second(db.GetToolCall(ctx, "c", "x", "y")),
			second(db.GetFile(ctx, "c", "x")), second(db.GetCatalog(ctx, "x")),
			second(db.GetUserChannel(ctx, "x")), second(db.FindUserChannel(ctx, "u", "c", "x")),
		} {
			if !errors.Is(err, ErrNotFound) || errors.Is(err, sql.ErrNoRows) {
				t.Errorf("error %v, want ErrNotFound only", err)
			}
		}
	})
}
