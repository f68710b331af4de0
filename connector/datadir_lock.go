package connector

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DataDirLockFile is the name of the lock file LockDataDir keeps in a data
// directory. It holds the owner's process id and address.
const DataDirLockFile = "xconn.lock"

// DataDirOwnerFile is the name of the file in which a data directory
// records whom it belongs to (see DataDirLock.Claim).
const DataDirOwnerFile = "xconn.owner"

// maxOwner bounds an owner name and what Claim reads back.
const maxOwner = 128

// DataDirOwnedError is the error of DataDirLock.Claim when the directory
// belongs to another owner: two connectors sharing one directory would
// share its keys and files.
type DataDirOwnedError struct {
	Dir      string // the directory as the caller named it
	Owner    string // whom it belongs to
	Claimant string // who asked
}

func (e *DataDirOwnedError) Error() string {
	return fmt.Sprintf("data directory %s belongs to %s, not %s: give each its own --data", e.Dir, e.Owner, e.Claimant)
}

// DataDirInUseError is the error of LockDataDir when another process (or
// another lock in this one) holds the directory. PID and Addr are what the
// holder recorded: zero and "" when it has not recorded them yet.
type DataDirInUseError struct {
	Dir  string
	PID  int
	Addr string
}

func (e *DataDirInUseError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	if e.Addr != "" {
		who += " listening on " + e.Addr
	}
	return fmt.Sprintf("data directory %s is in use by %s; stop it or choose another --data", e.Dir, who)
}

// DataDirLock is an exclusive lock on a data directory: two processes
// sharing one directory would serve the same channels, leases and files
// and orphan each other's channels. The operating system releases it when
// the process ends, however it ends. Create it with LockDataDir; Close
// releases it. Safe for concurrent use.
type DataDirLock struct {
	dir string

	mu sync.Mutex
	f  *os.File // nil once closed
}

// LockDataDir creates dir (mode 0700) when missing and takes its exclusive
// lock, recording this process's id in DataDirLockFile. When another
// holder has it, the error is a *DataDirInUseError naming that holder's
// process id and address. Locking is advisory (flock) on Unix systems; on
// others the lock file is written but not enforced.
func LockDataDir(dir string) (*DataDirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("connector: data directory: %w", err)
	}
	path := filepath.Join(dir, DataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("connector: data directory lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		defer f.Close()
		if errors.Is(err, errLocked) {
			e := &DataDirInUseError{Dir: dir}
			e.PID, e.Addr = readLockOwner(f)
			return nil, e
		}
		return nil, fmt.Errorf("connector: data directory lock: %w", err)
	}
	l := &DataDirLock{dir: dir, f: f}
	if err := l.write(""); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// Dir returns the locked directory.
func (l *DataDirLock) Dir() string { return l.dir }

// SetAddr records the address this process serves on, for the error a
// second process gets.
func (l *DataDirLock) SetAddr(addr string) error {
	return l.write(addr)
}

func (l *DataDirLock) write(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("connector: data directory lock released")
	}
	line := strconv.Itoa(os.Getpid())
	if addr != "" {
		line += " " + addr
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("connector: data directory lock: %w", err)
	}
	if _, err := l.f.WriteAt([]byte(line+"\n"), 0); err != nil {
		return fmt.Errorf("connector: data directory lock: %w", err)
	}
	return nil
}

// Claim makes the locked directory owner's, or checks that it is: a data
// directory holds the state of one connector (or program), named by owner
// (such as its card id). The first claim writes owner into
// DataDirOwnerFile (mode 0600); a later claim by another owner fails with
// a *DataDirOwnedError and changes nothing. A directory without the file
// (made before owners were recorded) is claimed by the first to ask.
func (l *DataDirLock) Claim(owner string) error {
	if owner == "" || len(owner) > maxOwner || strings.ContainsAny(owner, "\r\n") {
		return fmt.Errorf("connector: data directory owner %q: want one line of at most %d bytes", owner, maxOwner)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("connector: data directory lock released")
	}
	path := filepath.Join(l.dir, DataDirOwnerFile)
	f, err := os.Open(path)
	switch {
	case err == nil:
		b, rerr := io.ReadAll(io.LimitReader(f, maxOwner+1))
		f.Close()
		if rerr != nil {
			return fmt.Errorf("connector: data directory owner: %w", rerr)
		}
		if have := strings.TrimSpace(string(b)); have != owner && have != "" {
			return &DataDirOwnedError{Dir: l.dir, Owner: have, Claimant: owner}
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("connector: data directory owner: %w", err)
	}
	if err := os.WriteFile(path, []byte(owner+"\n"), 0o600); err != nil {
		return fmt.Errorf("connector: data directory owner: %w", err)
	}
	return nil
}

// Close releases the lock (idempotent). The lock file stays; it is
// overwritten by the next holder.
func (l *DataDirLock) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the lock
	l.f = nil
	return err
}

// readLockOwner parses "<pid> [<addr>]" from a lock file (at most 512
// bytes; anything malformed reads as unknown).
func readLockOwner(f *os.File) (int, string) {
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, 512), 512))
	if err != nil {
		return 0, ""
	}
	return parseLockOwner(string(b))
}

func parseLockOwner(s string) (int, string) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return 0, ""
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, ""
	}
	addr := ""
	if len(fields) > 1 && len(fields[1]) <= 256 {
		addr = fields[1]
	}
	return pid, addr
}

// lockDataDir takes the lock of Options.DataDir (Start's hook); a server
// without a DataDir locks nothing.
func (s *Server) lockDataDir() error {
	if s.opts.DataDir == "" || s.dirLock != nil {
		return nil
	}
	l, err := LockDataDir(s.opts.DataDir)
	if err != nil {
		return err
	}
	s.dirLock = l
	return nil
}

// noteServeAddr records the serving address in the data directory lock
// (Serve's hook).
func (s *Server) noteServeAddr(addr string) {
	if s.dirLock != nil {
		_ = s.dirLock.SetAddr(addr)
	}
}

// unlockDataDir releases the data directory lock (Close's hook, and a
// failed Start's).
func (s *Server) unlockDataDir() {
	_ = s.dirLock.Close()
}
