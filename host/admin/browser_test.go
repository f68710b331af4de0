package admin

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xconn/xconn/testrig/browser"
)

// TestBrowserOperatorPage drives the page in headless Chromium at phone
// and desktop sizes: the login form, then the page with a signed-in room
// and a QR sign-in whose image is shown, updated live when a second QR
// sign-in starts; nothing may overflow the window sideways. Screenshots
// are kept under $XCONN_ARTIFACTS/admin (or the test's temporary
// directory).
func TestBrowserOperatorPage(t *testing.T) {
	browser.Chromium(t) // skips with a reason when there is none
	dir := browser.ArtifactDir(t, "admin")
	for _, size := range []browser.Size{browser.Phone, browser.Desktop} {
		t.Run(size.Name, func(t *testing.T) {
			r := newRig(t, nil)
			r.room("ann", "lobby")
			r.qr("bob")
			ctx := browser.Start(t, size, 60*time.Second)

			if err := chromedp.Do(ctx,
				chromedp.Navigate(r.url+"/"),
				chromedp.WaitVisible(chromedp.CSS("#token")),
			); err != nil {
				t.Fatalf("the page without a session does not show the login form: %v", err)
			}
			browser.Screenshot(t, ctx, dir, size.Name+"-login")
			steps := []struct {
				what string
				do   chromedp.Action[chromedp.Void]
			}{
				{"type the token", chromedp.SendKeys(chromedp.CSS("#token"), testToken)},
				{"submit", chromedp.Click(chromedp.CSS("button[type=submit]"))},
				{"the channels shown", chromedp.WaitVisible(chromedp.CSS("article.channel"))},
				{"the stream open", chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === 'live'`)},
				{"the QR decoded as an image", chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector('.qr img'); return i !== null && i.complete && i.naturalWidth > 0; })()`)},
			}
			for _, st := range steps {
				sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				err := chromedp.Do(sctx, st.do)
				cancel()
				if err != nil {
					browser.Screenshot(t, ctx, dir, size.Name+"-failed")
					t.Fatalf("after login, %s: %v", st.what, err)
				}
			}
			checkLayout(t, ctx, size)
			browser.Screenshot(t, ctx, dir, size.Name+"-page")

			// A second QR sign-in appears without a reload.
			r.qr("cy")
			if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.querySelectorAll('.qr img').length === 2`)); err != nil {
				t.Fatalf("the page did not update live: %v", err)
			}
			text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			if err != nil {
				t.Fatal(err)
			}
			noSecrets(t, "the page's text", text)
			html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
			if err != nil {
				t.Fatal(err)
			}
			noSecrets(t, "the page's HTML", html)
			cookie, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
			if err != nil || cookie != "" {
				t.Fatalf("the session cookie is readable by scripts: %q %v", cookie, err)
			}
			checkLayout(t, ctx, size)
			browser.Screenshot(t, ctx, dir, size.Name+"-live")
		})
	}
}

// checkLayout fails when the page is wider than the window (a sideways
// scroll on a phone) or an element sticks out of it.
func checkLayout(t *testing.T, ctx context.Context, size browser.Size) {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
	  const w = document.documentElement.clientWidth;
	  if (document.documentElement.scrollWidth > w) return 'page ' + document.documentElement.scrollWidth + ' wider than ' + w;
	  for (const el of document.querySelectorAll('main *, header *')) {
	    const r = el.getBoundingClientRect();
	    if (r.width > 0 && (r.right > w + 0.5 || r.left < -0.5)) return (el.className || el.tagName) + ' spans ' + r.left + '..' + r.right + ' of ' + w;
	  }
	  return '';
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if out != "" {
		t.Errorf("%s (%dx%d): %s", size.Name, size.Width, size.Height, out)
	}
}
