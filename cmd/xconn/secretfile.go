package main

import (
	"fmt"
	"os"
	"runtime"
)

// checkSecretFileMode refuses a key file that other users may read or
// write (any group or other permission bit): it was created 0600, and a
// wider mode means someone changed it, or it was copied in carelessly.
// Windows has no such bits and is not checked.
func checkSecretFileMode(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("key file %s has mode %04o, open to other users: run chmod 600 %s (and replace the key if others may have read it)", path, perm, path)
	}
	return nil
}
