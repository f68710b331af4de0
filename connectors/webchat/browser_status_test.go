package webchat_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/protocol"
)

// statusOnScreen reports whether the chat status is drawn inside the
// window and is the topmost element at its own centre (not covered).
const statusOnScreen = `(() => {
  const el = document.getElementById("status");
  if (!el) return false;
  const r = el.getBoundingClientRect();
  if (r.height === 0 || r.top < 0 || r.bottom > window.innerHeight) return false;
  const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return top !== null && (top === el || el.contains(top));
})()`

// browserSignIn opens a QR login URL of s in the browser, confirms it and
// waits until the chat says connected.
func browserSignIn(t *testing.T, ctx, bctx context.Context, s *system, user string) {
	t.Helper()
	si, loginURL := s.startQR(t, user)
	if err := chromedp.Do(bctx, chromedp.Navigate(loginURL), chromedp.WaitVisible(chromedp.CSS("#confirm"))); err != nil {
		t.Fatalf("open login URL: %v", err)
	}
	waitStatus(t, si, protocol.AuthScanned)
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#composer")),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="connected"]`)),
	); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if _, err := si.Wait(ctx); err != nil {
		t.Fatalf("sign-in: %v", err)
	}
}

// TestBrowserStatusInView: on a phone (390×844) with a long history, the
// chat status stays on screen (it is in the page's header), and when the
// server stops it says "reconnecting…" at once, still on screen (issue 34,
// item 2: the status used to scroll 434 px out of view, and nothing
// visible changed until a send failed).
func TestBrowserStatusInView(t *testing.T) {
	s := newSystem(t, systemOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bctx := newBrowser(t, ctx, 390, 844)
	browserSignIn(t, ctx, bctx, s, "status-user")

	// A long history: 16 messages and their answers.
	const n = 16
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](fmt.Sprintf(`(async () => {
		for (let i = 1; i <= %d; i++) {
			const res = await fetch("/webchat/api/messages", {method: "POST", credentials: "same-origin",
				headers: {"Content-Type": "application/json"}, body: JSON.stringify({text: "message number " + i + " of a long chat"})});
			if (res.status !== 202) return false;
		}
		return true;
	})()`, n), chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(`%s.length === %d`, finalsJS("assistant"), n))); err != nil {
		t.Fatalf("answers: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { window.scrollTo(0, document.body.scrollHeight); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	scrolled, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`window.scrollY`))
	if err != nil || scrolled < 400 {
		t.Fatalf("scrolled %v px (err %v): the history is not long enough to test", scrolled, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](statusOnScreen+` && document.querySelector('#status[data-state="connected"]') !== null`)); err != nil {
		t.Fatalf("status not on screen after %v px of history: %v", scrolled, err)
	}
	screenshot(t, bctx, "webchat-phone-long-connected.png")

	// The server stops: "reconnecting…" at once, on screen.
	s.stopConn()
	stopped := time.Now()
	rctx, rcancel := context.WithTimeout(bctx, 3*time.Second)
	_, err = chromedp.Run(rctx, chromedp.Poll[chromedp.Void](`document.querySelector('#status[data-state="reconnecting"]') !== null`,
		chromedp.WithPollingInterval(20*time.Millisecond)))
	rcancel()
	if err != nil {
		t.Fatalf("no \"reconnecting…\" within 3 s of the server stopping: %v", err)
	}
	t.Logf("reconnecting shown %v after the server stopped", time.Since(stopped).Round(time.Millisecond))
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
	if err != nil || text != "reconnecting…" {
		t.Fatalf("status %q (err %v)", text, err)
	}
	onScreen, err := chromedp.Run(bctx, chromedp.Evaluate[bool](statusOnScreen))
	if err != nil || !onScreen {
		t.Fatalf("the status is not on screen while reconnecting (err %v)", err)
	}
	screenshot(t, bctx, "webchat-phone-long-reconnecting.png")
}

// TestBrowserCookiePerInstance: one browser signed in to a demo's chat by
// QR and to a room of another web chat connector on the same host (another
// port) stays signed in to both: each connector has its own session
// cookie (issue 34, item 8: joining the room replaced the demo's cookie,
// and the demo's page said "not signed in"). A browser that is not signed
// in is told how to get a new QR code.
func TestBrowserCookiePerInstance(t *testing.T) {
	demo := newSystem(t, systemOptions{})
	other := newSystem(t, systemOptions{})
	if demo.conn.CookieName() == other.conn.CookieName() {
		t.Fatalf("both connectors name their cookie %q", demo.conn.CookieName())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bctx := newBrowser(t, ctx, 390, 844)

	// Not signed in: the page says how to get a QR code.
	if err := chromedp.Do(bctx, chromedp.Navigate(demo.baseURL+"/webchat/"), chromedp.WaitVisible(chromedp.CSS(".card"))); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.textContent`))
	if err != nil || !strings.Contains(body, "not signed in") || !strings.Contains(body, "--signin") {
		t.Fatalf("not-signed-in page %q (err %v): want how to get a new QR code (--signin)", body, err)
	}
	screenshot(t, bctx, "webchat-phone-not-signed-in.png")

	browserSignIn(t, ctx, bctx, demo, "demo")

	// The other connector's room, signed in by its own host.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	si, err := other.host.Connect(sctx, "room-user", webchat.CardID, webchat.FlowRoom, map[string]string{"room": "lobby", "access_code": "c0de-c0de"})
	if err == nil {
		_, err = si.Wait(sctx)
	}
	scancel()
	if err != nil {
		t.Fatalf("room sign-in: %v", err)
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(other.baseURL+"/webchat/rooms/lobby"),
		chromedp.WaitVisible(chromedp.CSS("#access_code")),
		chromedp.SendKeys(chromedp.CSS("#access_code"), "c0de-c0de"),
		chromedp.Click(chromedp.CSS("#enter")),
		chromedp.WaitVisible(chromedp.CSS("#composer")),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="connected"]`)),
	); err != nil {
		t.Fatalf("enter the room: %v", err)
	}
	screenshot(t, bctx, "webchat-phone-room.png")

	// Back to the demo's chat: still signed in, and it works.
	if err := chromedp.Do(bctx,
		chromedp.Navigate(demo.baseURL+"/webchat/"),
		chromedp.WaitVisible(chromedp.CSS("#composer")),
		chromedp.WaitVisible(chromedp.CSS(`#status[data-state="connected"]`)),
		chromedp.SendKeys(chromedp.CSS("#text"), "still here"),
		chromedp.Click(chromedp.CSS("#send")),
	); err != nil {
		body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.textContent`))
		t.Fatalf("the demo's chat after joining the room: %v; page %q", err, body)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[chromedp.Void](finalsJS("assistant")+`.includes("You said: still here")`)); err != nil {
		t.Fatalf("echo in the demo's chat: %v", err)
	}
	screenshot(t, bctx, "webchat-phone-demo-after-room.png")
}
