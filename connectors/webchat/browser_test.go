package webchat_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/xconn/xconn/host"
)

// chromiumNames are the names a Chromium (or Chrome) binary goes by on
// PATH; $XCONN_CHROMIUM, a path, comes first.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"}

// findChromium returns the browser the browser tests drive, or skips the
// test saying what it looked for and how to enable it.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("XCONN_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("XCONN_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skipf("browser test skipped: no Chromium on PATH (looked for %s); install one (Debian: apt-get install chromium; .ci/run does) or set XCONN_CHROMIUM to its path",
		strings.Join(chromiumNames, ", "))
	return ""
}

// pacedAgent slows Echo's deltas down so that the page visibly streams.
type pacedAgent struct{ pace time.Duration }

func (p pacedAgent) HandleMessage(ctx context.Context, msg *host.UserMessage, reply host.ReplyStream) error {
	return host.Echo{}.HandleMessage(ctx, msg, pacedStream{ReplyStream: reply, pace: p.pace})
}

type pacedStream struct {
	host.ReplyStream
	pace time.Duration
}

func (s pacedStream) Delta(ctx context.Context, text string) error {
	select {
	case <-time.After(s.pace):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.ReplyStream.Delta(ctx, text)
}

// observeJS records what the chat list shows while it changes: every
// assistant bubble's text while it is still streaming, and the finals.
const observeJS = `(() => {
  window.__streamed = [];
  new MutationObserver(() => {
    document.querySelectorAll('li.msg.assistant.streaming .body').forEach(b => {
      const t = b.textContent;
      if (t && window.__streamed[window.__streamed.length - 1] !== t) window.__streamed.push(t);
    });
  }).observe(document.getElementById('messages'), {subtree: true, childList: true, characterData: true, attributes: true});
  return true;
})()`

// lastFinal returns the text of the last final assistant bubble.
const lastFinal = `(() => {
  const all = document.querySelectorAll('li.msg.assistant.final .body');
  return all.length ? all[all.length - 1].textContent : "";
})()`

func TestBrowserChat(t *testing.T) {
	chromiumPath := findChromium(t)
	s := newSystem(t, systemOptions{agent: pacedAgent{pace: 120 * time.Millisecond}})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(430, 900), // a phone-sized window
	)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	t0 := time.Now()
	step := func(name string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), name) }
	// Open the QR URL and confirm.
	browserSignIn(t, ctx, bctx, s, "browser-user")
	step("signed in")
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](observeJS)); err != nil {
		t.Fatal(err)
	}

	// Type a message: the echo streams in, then the final replaces it.
	const want = "You said: hello from a real browser"
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS("#text"), "hello from a real browser"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS("li.msg.user.final")),
		chromedp.Poll[chromedp.Void](`document.querySelector('li.msg.assistant.streaming') !== null`),
	); err != nil {
		t.Fatalf("send: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](
		`(`+lastFinal+`) === `+jsString(want)+` && !document.querySelector('li.msg.assistant.streaming')`)); err != nil {
		t.Fatalf("final: %v", err)
	}
	step("echo final")
	streamed, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.__streamed`))
	if err != nil {
		t.Fatal(err)
	}
	partial := false
	for _, txt := range streamed {
		if len(txt) < len(want) && strings.HasPrefix(want, txt) {
			partial = true
		}
	}
	if !partial {
		t.Fatalf("no partial streamed text before the final; saw %q", streamed)
	}
	users, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('li.msg.assistant').length`))
	if err != nil || users != 1 {
		t.Fatalf("%d assistant bubbles (err %v), want 1: the final must replace the deltas", users, err)
	}

	// Upload an image: it comes back inline.
	imgPath := filepath.Join(t.TempDir(), "pixel-art.png")
	if err := os.WriteFile(imgPath, testPNG(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx,
		chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{imgPath}),
		chromedp.SendKeys(chromedp.CSS("#text"), "a picture"),
		chromedp.Click(chromedp.CSS("#send")),
	); err != nil {
		t.Fatalf("upload: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](`(() => {
		const imgs = document.querySelectorAll('li.msg.assistant.final img.inline-image');
		const img = imgs[imgs.length - 1];
		return (`+lastFinal+`) === "You said: a picture" && img && img.complete && img.naturalWidth === 160 && img.naturalHeight === 100;
	})()`)); err != nil {
		t.Fatalf("echoed image: %v", err)
	}

	step("image echoed")
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "webchat.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("XCONN_WRITE_SCREENSHOT") == "1" {
		docs := filepath.Join("..", "..", "docs")
		if err := os.MkdirAll(docs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, "webchat.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// jsString quotes s as a JavaScript string literal (ASCII input).
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
