package host

import (
	"bytes"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector"
)

// OnSecret hands the host's secrets to the embedder's redactor (the SDK's
// public connector.Redactor here), so that they never reach a log line.
func TestOnSecretFeedsARedactor(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var (
		mu   sync.Mutex
		seen []string
	)
	secrets := connector.NewRedactor(0)
	onSecret := func(values ...string) {
		mu.Lock()
		seen = append(seen, values...)
		mu.Unlock()
		secrets.Add(values...)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	dir := t.TempDir()
	th := newTestHost(t, dir, func(o *Options) {
		o.OnSecret = onSecret
		o.Logger = slog.New(connector.NewRedactingHandler(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil), secrets))
	})
	th.admitOnline(t, f)
	th.signinRoom(t, "vi", "im.fake") // room=r1 (not secret), access_code=secret-code-xyz (password)
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if !slices.Contains(got, f.apiKey) || !slices.Contains(got, "secret-code-xyz") || slices.Contains(got, "r1") {
		t.Fatalf("secrets reported: %q", got)
	}
	th.log.Warn("a line with " + f.apiKey + " and secret-code-xyz")
	logMu.Lock()
	line := logs.String()
	logMu.Unlock()
	if bytes.Contains([]byte(line), []byte(f.apiKey)) || bytes.Contains([]byte(line), []byte("secret-code-xyz")) {
		t.Fatalf("log line not redacted: %s", line)
	}
	th.stop(t)

	// A restart reports the stored API key before anything is logged.
	mu.Lock()
	seen = nil
	mu.Unlock()
	newTestHost(t, dir, func(o *Options) { o.OnSecret = onSecret })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(seen, f.apiKey) {
		t.Fatalf("secrets reported at start: %q", seen)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
