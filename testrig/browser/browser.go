// Package browser is the headless-Chromium rig of the repository's
// browser tests: it finds a Chromium (skipping the test with a reason when
// there is none), starts it at a window size through chromedp, and keeps
// screenshots as test artifacts.
//
// Chromium is $XCONN_CHROMIUM (a path; a wrong one fails the test) or the
// first of [Names] on PATH (Debian: apt-get install chromium; .ci/run
// installs it when .ci/needs-chromium exists). Screenshots go to
// $XCONN_ARTIFACTS/<dir> when XCONN_ARTIFACTS is set (CI keeps that
// folder), else to the test's temporary directory.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Names are the names a Chromium (or Chrome) binary goes by on PATH.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"}

// Chromium returns the browser to drive, or skips t saying what it looked
// for and how to enable it.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("XCONN_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("XCONN_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range Names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("browser test skipped: no Chromium on PATH (looked for %s); install one (Debian: apt-get install chromium; .ci/run does) or set XCONN_CHROMIUM to its path",
		strings.Join(Names, ", "))
	return ""
}

// Size is a browser window size in CSS pixels.
type Size struct {
	Name          string
	Width, Height int
	// Mobile emulates a phone: touch, the mobile viewport meta tag honored,
	// device scale factor 2.
	Mobile bool
}

// The sizes the operator-facing pages are tested at.
var (
	Phone   = Size{Name: "phone", Width: 390, Height: 844, Mobile: true}
	Desktop = Size{Name: "desktop", Width: 1280, Height: 800}
)

// Start starts a headless Chromium with a fresh profile and returns a
// chromedp context of one tab at size s, bounded by timeout. Everything
// ends at the test's cleanup.
func Start(t testing.TB, s Size, timeout time.Duration) context.Context {
	t.Helper()
	path := Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(s.Width, s.Height),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if s.Mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile}
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(s.Width), int64(s.Height), opts...)); err != nil {
		t.Fatalf("browser: start at %dx%d: %v", s.Width, s.Height, err)
	}
	return bctx
}

// ArtifactDir returns the directory a test's artifacts of kind dir go to:
// $XCONN_ARTIFACTS/dir (created) when set, else a temporary directory of
// t.
func ArtifactDir(t testing.TB, dir string) string {
	t.Helper()
	root := os.Getenv("XCONN_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	p := filepath.Join(root, dir)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatalf("artifacts: %v", err)
	}
	return p
}

// Screenshot saves a PNG of the whole page (beyond the window when it
// scrolls) as dir/name.png and returns its path.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", p)
	return p
}
