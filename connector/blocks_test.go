package connector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

func TestBuildInfoNeverEmpty(t *testing.T) {
	b := connector.BuildInfo()
	for name, v := range map[string]string{"version": b.Version, "git_tag": b.GitTag, "git_rev": b.GitRev} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	if !regexp.MustCompile(`^[0-9]{10}$`).MatchString(b.BuildTime) {
		t.Errorf("build_time %q: want YYMMDDhhmm", b.BuildTime)
	}
}

// TestBuildInfoLDFlags links a small program with the -X variables named in
// BuildInfo's doc comment and checks that they come out unchanged.
func TestBuildInfoLDFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const p = "github.com/xconn/xconn/internal/buildinfo"
	bin := filepath.Join(t.TempDir(), "buildinfo")
	flags := "-X " + p + ".version=1.2.0 -X " + p + ".gitTag=v1.2.0-rc1 -X " + p + ".gitRev=0123abc -X " + p + ".buildTime=2607241200"
	build := exec.Command(goBin, "build", "-o", bin, "-ldflags", flags, "./testdata/buildinfo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got protocol.Build
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := protocol.Build{Version: "1.2.0", GitTag: "v1.2.0-rc1", GitRev: "0123abc", BuildTime: "2607241200"}
	if got.Version != want.Version || got.GitTag != want.GitTag || got.GitRev != want.GitRev || got.BuildTime != want.BuildTime {
		t.Fatalf("BuildInfo = %+v, want %+v", got, want)
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	re := regexp.MustCompile(`^x_[a-z2-7]{26}$`)
	for range 1000 {
		id := connector.NewID("x_")
		if !re.MatchString(id) {
			t.Fatalf("id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestRedactor(t *testing.T) {
	var zero connector.Redactor // the zero value is usable
	zero.Add("s3cret-value", "short")
	if got := zero.Scrub("a s3cret-value and short"); got != "a [REDACTED] and short" {
		t.Fatalf("Scrub = %q", got)
	}
	if zero.Len() != 1 {
		t.Fatalf("Len = %d, want 1 (values under MinRedactedLen are ignored)", zero.Len())
	}
	zero.Remove("s3cret-value")
	if got := zero.Scrub("s3cret-value"); got != "s3cret-value" {
		t.Fatalf("removed value still scrubbed: %q", got)
	}

	var nilR *connector.Redactor
	nilR.Add("ignored-value")
	if nilR.Scrub("ignored-value") != "ignored-value" || nilR.Len() != 0 {
		t.Fatal("a nil Redactor must scrub nothing")
	}

	// Bounded: the oldest value goes first.
	r := connector.NewRedactor(2)
	r.Add("first-secret", "second-secret", "third-secret")
	if r.Len() != 2 || r.Scrub("first-secret") != "first-secret" || r.Scrub("third-secret") != "[REDACTED]" {
		t.Fatalf("bounded set: len %d, %q", r.Len(), r.Scrub("first-secret third-secret"))
	}
	// The longer of two overlapping secrets is replaced whole.
	r2 := connector.NewRedactor(0)
	r2.Add("token-abc", "token-abcdef")
	if got := r2.Scrub("token-abcdef"); got != "[REDACTED]" {
		t.Fatalf("overlap: %q", got)
	}
}

func TestRedactorConcurrent(t *testing.T) {
	var r connector.Redactor
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				v := fmt.Sprintf("secret-%d-%d", i, j)
				r.Add(v)
				if got := r.Scrub("x " + v); got != "x [REDACTED]" {
					t.Errorf("Scrub = %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestNewRedactingHandler(t *testing.T) {
	var buf bytes.Buffer
	r := connector.NewRedactor(0)
	r.Add("tok-123456")
	log := slog.New(connector.NewRedactingHandler(slog.NewJSONHandler(&buf, nil), r))
	log = log.With("bot_token", "plain", "ctx", "with tok-123456").WithGroup("g")
	log.Info("sent tok-123456",
		"X-Api-Key", "k", "token_count", 3, "err", errors.New("refused tok-123456"),
		"s", stringer("tok-123456!"), "raw", []byte("tok-123456"),
		slog.Group("inner", "password", "p", "note", "tok-123456"))
	r.Add("later-secret")
	log.Info("later-secret")
	out := buf.String()
	if strings.Contains(out, "tok-123456") || strings.Contains(out, "later-secret") || strings.Contains(out, `"plain"`) {
		t.Fatalf("secret in log: %s", out)
	}
	for _, want := range []string{`"bot_token":"[REDACTED]"`, `"X-Api-Key":"[REDACTED]"`, `"token_count":3`, `"password":"[REDACTED]"`, `"msg":"sent [REDACTED]"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in %s", want, out)
		}
	}
	// A nil Redactor still redacts by key.
	buf.Reset()
	slog.New(connector.NewRedactingHandler(slog.NewTextHandler(&buf, nil), nil)).Log(context.Background(), slog.LevelInfo, "m", "authorization", "Bearer x")
	if strings.Contains(buf.String(), "Bearer") {
		t.Fatalf("nil redactor: %s", buf.String())
	}
}
