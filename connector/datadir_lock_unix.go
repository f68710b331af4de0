//go:build unix

package connector

import (
	"errors"
	"os"
	"syscall"
)

// errLocked: another open file description holds the lock.
var errLocked = errors.New("connector: locked")

// lockFile takes an exclusive, non-blocking flock on f.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}
