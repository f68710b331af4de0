package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/qr"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// signinCancelTimeout bounds the auth.cancel sent when "xconn host" is
// interrupted during a sign-in.
const signinCancelTimeout = 2 * time.Second

// hostDBFile is the SQLite file of "xconn host" in its data directory.
const hostDBFile = "host.db"

// waitSignin prints the states of a sign-in until it ends: one line per
// change of status or message (auth.status polling repeats the same state),
// and each new QR code in the terminal with its text, which is the URL to
// open on another device. ctx ending (Ctrl-C, SIGTERM) cancels the sign-in
// at once (auth.cancel, bounded by signinCancelTimeout) and returns
// ctx.Err().
func waitSignin(ctx context.Context, s *host.Signin, out *lineWriter) (store.UserChannel, error) {
	var lastLine, lastQR string
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signinCancelTimeout)
			_ = s.Cancel(cctx)
			cancel()
			return store.UserChannel{}, ctx.Err()
		case st, ok := <-s.Updates():
			if !ok {
				return s.Wait(context.WithoutCancel(ctx)) // done: returns at once
			}
			if st.QRCodeText != "" && st.QRCodeText != lastQR {
				lastQR = st.QRCodeText
				if art, err := qr.Terminal(st.QRCodeText); err == nil {
					out.printf("scan this QR code to sign in, or open its text: %s\n%s", st.QRCodeText, art)
				} else {
					out.printf("sign in by opening: %s", st.QRCodeText)
				}
			}
			line := "sign-in " + st.Status
			if st.Message != "" {
				line += ": " + st.Message
			}
			if line != lastLine {
				lastLine = line
				out.printf("%s", line)
			}
		}
	}
}

// hostPacketLine renders a packet for the "xconn host" log, or reports
// false for the packets of auth.status polling, which repeat every poll
// interval: the sign-in's state lines (waitSignin) say what changes. An
// auth.status.ack carrying an error is still printed.
func hostPacketLine(dir protocol.Direction, env *protocol.Envelope) (string, bool) {
	switch env.Type {
	case protocol.TypeAuthStatus:
		return "", false
	case protocol.TypeAuthStatusAck:
		if env.Error == nil {
			return "", false
		}
	}
	return packetLine(dir, env), true
}

// dataDirCleanup records what a data directory holds before "xconn host"
// opens its store there, so that a run that ends before a connector is
// admitted can leave it as it found it: a refused admission must not leave
// a new host.db and secret.key behind.
type dataDirCleanup struct {
	dir     string
	existed bool
	before  map[string]bool
}

func newDataDirCleanup(dir string) *dataDirCleanup {
	c := &dataDirCleanup{dir: dir, before: map[string]bool{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.existed = true // unreadable: never remove anything
			c.before = nil
		}
		return c
	}
	c.existed = true
	for _, e := range entries {
		c.before[e.Name()] = true
	}
	return c
}

// undo removes what was created in the directory since
// newDataDirCleanup: the directory itself when it did not exist, else the
// entries that are new when the store (host.db) is new. Call it after the
// store is closed.
func (c *dataDirCleanup) undo() error {
	if !c.existed {
		return os.RemoveAll(c.dir)
	}
	if c.before == nil || c.before[hostDBFile] {
		// An existing store stays as it is (with its write-ahead log).
		return nil
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !c.before[e.Name()] {
			errs = append(errs, os.RemoveAll(filepath.Join(c.dir, e.Name())))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up %s: %w", c.dir, err)
	}
	return nil
}

// checkDownloadOrigins reports a --download-origin that is not an origin
// as a usage error, before anything starts (host.New checks them too).
func checkDownloadOrigins(list []string) error {
	for _, s := range list {
		if s == host.AnyDownloadOrigin {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--download-origin %q: want scheme://host[:port] or %q", s, host.AnyDownloadOrigin)
		}
	}
	return nil
}
