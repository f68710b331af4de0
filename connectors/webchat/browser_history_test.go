package webchat_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// artifactDir is where browser tests write screenshots: $XCONN_TEST_ARTIFACTS
// when set (CI keeps it), else the test's artifact directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("XCONN_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}

// newBrowser starts headless Chromium with a w×h viewport; it skips the
// test when Chromium is not found (findChromium).
func newBrowser(t *testing.T, ctx context.Context, w, h int) context.Context {
	t.Helper()
	chromiumPath := findChromium(t)
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
		chromedp.WindowSize(w, h),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	// The window alone does not make a phone: headless Chromium keeps its
	// viewport at least 500 px wide.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		t.Fatalf("viewport %dx%d: %v", w, h, err)
	}
	return bctx
}

// screenshot writes the page as name into the artifact directory.
func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// finalsJS lists the texts of the final bubbles of from ("user" or
// "assistant"), oldest first.
func finalsJS(from string) string {
	return `Array.from(document.querySelectorAll('li.msg.` + from + `.final .body')).map(b => b.textContent)`
}

// TestBrowserHistoryAndStatus is issue 21's "done when" in a real browser:
// send messages (an image among them), restart the connector, reload: the
// history is there and the image is still an image; stop the host: the page
// says the agent is offline within 5 s; a message sent meanwhile is
// answered once a host is back, and the page says connected. Along the
// way: "/" leads to the chat, the favicon, the empty-chat hint and
// sign-out; screenshots at phone and desktop sizes.
func TestBrowserHistoryAndStatus(t *testing.T) {
	s := newSystem(t, systemOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bctx := newBrowser(t, ctx, 430, 900) // a phone-sized window
	t0 := time.Now()
	step := func(name string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), name) }

	// "/" of a browser that is not signed in leads to the sign-in note.
	location := func() string {
		t.Helper()
		loc, err := chromedp.Run(bctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(s.baseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".card"))); err != nil {
		t.Fatal(err)
	}
	loc := location()
	if loc != s.baseURL+"/webchat/" {
		t.Fatalf("/ led to %s, want %s/webchat/", loc, s.baseURL)
	}

	browserSignIn(t, ctx, bctx, s, "history-user")
	if err := chromedp.Do(bctx,
		chromedp.WaitVisible(chromedp.CSS("#empty")), // an empty chat says what to do
		chromedp.WaitVisible(chromedp.CSS("#signout")),
	); err != nil {
		t.Fatalf("chat after sign-in: %v", err)
	}
	step("signed in")
	screenshot(t, bctx, "webchat-phone-empty.png")

	// The favicon the page links, and /favicon.ico.
	icon, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('link[rel="icon"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{icon, s.baseURL + "/favicon.ico"} {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("favicon %s: %s %s", u, res.Status, res.Header.Get("Content-Type"))
		}
	}
	// "/" of a signed-in browser leads to its chat.
	if err := chromedp.Do(bctx, chromedp.Navigate(s.baseURL+"/"), chromedp.WaitVisible(chromedp.CSS("#composer"))); err != nil {
		t.Fatal(err)
	}
	if loc := location(); loc != s.baseURL+"/webchat/" {
		t.Fatalf("/ led a signed-in browser to %s", loc)
	}

	// Two messages, one with an image.
	send := func(text string) {
		t.Helper()
		if err := chromedp.Do(bctx,
			chromedp.WaitEnabled(chromedp.CSS("#send")),
			chromedp.SendKeys(chromedp.CSS("#text"), text),
			chromedp.Click(chromedp.CSS("#send")),
		); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
	}
	waitJS := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](js)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	send("first message")
	waitJS("first echo", finalsJS("assistant")+`.includes("You said: first message")`)
	imgPath := filepath.Join(t.TempDir(), "pixel-art.png")
	if err := os.WriteFile(imgPath, testPNG(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{imgPath})); err != nil {
		t.Fatal(err)
	}
	send("a picture")
	const imagesShown = `(() => {
		const ok = sel => { const i = document.querySelector(sel); return i && i.complete && i.naturalWidth === 160; };
		return ok('li.msg.user.final img.inline-image') && ok('li.msg.assistant.final img.inline-image');
	})()`
	waitJS("image echo", finalsJS("assistant")+`.includes("You said: a picture") && `+imagesShown)
	// The newest message is in view, the image loaded above the composer.
	waitJS("scrolled to the end", `window.innerHeight + window.scrollY >= document.body.scrollHeight - 2`)
	step("two messages")
	screenshot(t, bctx, "webchat-phone-chat.png")

	// Restart the connector, reload: the history is back, images as images.
	s.restartConnector()
	step("connector restarted")
	if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#status[data-state="connected"]`))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitJS("history after restart", `(() => {
		const u = `+finalsJS("user")+`, a = `+finalsJS("assistant")+`;
		return u.join("|") === "first message|a picture" && a.join("|") === "You said: first message|You said: a picture";
	})()`)
	waitJS("images after reload", imagesShown)
	hidden, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("empty").hidden`))
	if err != nil || !hidden {
		t.Fatalf("empty-chat hint shown beside the history (err %v)", err)
	}
	step("history after restart and reload")

	// Stop the host: the page says so within 5 s.
	s.stopHost()
	stopped := time.Now()
	offCtx, offCancel := context.WithTimeout(bctx, 5*time.Second)
	_, err = chromedp.Run(offCtx, chromedp.Poll[chromedp.Void](`document.querySelector('#status[data-state="agent_offline"]') !== null`))
	offCancel()
	if err != nil {
		t.Fatalf("the page did not show the agent offline within 5 s: %v", err)
	}
	step("agent offline shown")
	t.Logf("agent offline shown %v after the host stopped", time.Since(stopped).Round(time.Millisecond))
	status, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
	if err != nil || status != "agent offline — your messages will be answered when it is back" {
		t.Fatalf("status %q (err %v)", status, err)
	}
	send("are you there?")
	waitJS("pending message shown", finalsJS("user")+`.includes("are you there?")`)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, bctx, "webchat-desktop-offline.png")

	// A host again: the pending message is answered, the page is online.
	s.startHost(ctx)
	waitJS("pending message answered", finalsJS("assistant")+`.includes("You said: are you there?")`)
	waitJS("online again", `document.querySelector('#status[data-state="connected"]') !== null`)
	step("answered after the host came back")
	screenshot(t, bctx, "webchat-desktop-online.png")

	// Sign out: this browser leaves the chat.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitNotPresent(chromedp.CSS("#composer"))); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	body, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.textContent`))
	if err != nil || !strings.Contains(body, "not signed in") {
		t.Fatalf("after sign-out: %q (err %v)", body, err)
	}
	screenshot(t, bctx, "webchat-desktop-signed-out.png")
}
