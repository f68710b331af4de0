//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLiteFilesOwnerOnly: the data directory is forced to 0700 (it was
// left as found) and the database with its -wal and -shm files is 0600
// (they were created 0644 under the usual umask), for a new store and for
// files an older version left wider.
func TestSQLiteFilesOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	check := func(when string) {
		t.Helper()
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o700 {
			t.Errorf("%s: data directory mode %v, want 0700", when, got)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s: %v", when, err)
				continue
			}
			if got := st.Mode().Perm(); got&0o077 != 0 {
				t.Errorf("%s: %s mode %v, want 0600", when, filepath.Base(p), got)
			}
		}
	}
	db, err := Open(ctx, "sqlite:"+path, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutInstance(ctx, Instance{CardID: "c", ConnectorID: "i"}); err != nil {
		t.Fatal(err)
	}
	check("new store")
	db.Close()

	// Files and directory of an older version, readable by others.
	for _, p := range []string{dir, path} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := os.WriteFile(p, nil, 0o644); err == nil {
			_ = os.Chmod(p, 0o644)
		}
	}
	db, err = Open(ctx, "sqlite:"+path, Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check("reopened")
}

// TestSecureDirRefusesAFile: a data directory path that is a file is an
// error naming it.
func TestSecureDirRefusesAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SecureDir(p); err == nil {
		t.Fatal("SecureDir of a file succeeded")
	}
}
