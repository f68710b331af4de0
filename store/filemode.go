package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Modes of what the store creates: its data directory holds the key file
// and, with SQLite, the database, so only the owner may list or open them.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// SecureDir makes dir a directory that only its owner can use: it creates
// it (with its parents) with mode 0700, and changes an existing directory
// whose mode lets the group or others in to 0700. When the mode cannot be
// changed (the directory belongs to another user, say) it returns an error
// naming the directory and its mode. Open calls it for Options.DataDir.
func SecureDir(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("store: data directory %s: %w", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("store: data directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("store: data directory %s is not a directory", dir)
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return fmt.Errorf("store: data directory %s has mode %v, open to other users, and cannot be changed to %v: %w",
			dir, st.Mode().Perm(), DirMode, err)
	}
	return nil
}

// prepareSQLiteFiles creates the database file at path with mode 0600 when
// it does not exist (SQLite then creates its -wal and -shm files with the
// same mode) and takes the group and other bits off the database, -wal and
// -shm files that exist with a wider mode (a file of an older version, or
// one made under a permissive umask).
func prepareSQLiteFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return fmt.Errorf("store: create %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("store: create %s: %w", path, err)
	}
	return restrictSQLiteFiles(path)
}

// restrictSQLiteFiles makes the database file and its -wal and -shm files
// (those that exist) mode 0600 when their mode is wider.
func restrictSQLiteFiles(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: %s: %w", filepath.Base(p), err)
		}
		if st.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, FileMode); err != nil {
			return fmt.Errorf("store: %s has mode %v, open to other users, and cannot be changed to %v: %w",
				p, st.Mode().Perm(), FileMode, err)
		}
	}
	return nil
}
