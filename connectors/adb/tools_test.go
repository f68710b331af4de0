package adb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/protocol"
)

// TestStatus: android_device_status reports what the device says.
func TestStatus(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	st, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Status{Model: "Pixel 7", Manufacturer: "Google", AndroidVersion: "14", SDKLevel: 34, BatteryLevel: 76, Charging: true,
		ScreenOn: true, ScreenWidth: 1080, ScreenHeight: 2400, ForegroundApp: "com.google.android.apps.nexuslauncher",
		ForegroundActivity: "com.google.android.apps.nexuslauncher.NexusLauncherActivity"}
	if st != want {
		t.Fatalf("status\n%+v\nwant\n%+v", st, want)
	}
	f.Update(testSerial, func(d *adbtest.Device) { d.ScreenOff, d.Charging, d.Battery = true, false, 12 })
	st, err = connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil)
	if err != nil || st.ScreenOn || st.Charging || st.BatteryLevel != 12 {
		t.Fatalf("status after changes: %+v, %v", st, err)
	}
}

// TestScreenshot: a PNG through the transfer plane (file_ref plus a
// download_url), never inline; the channel keeps at most MaxScreenshots.
func TestScreenshot(t *testing.T) {
	_, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", func(o *Options) { o.MaxScreenshots = 2 })
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	var shots []Screenshot
	for range 3 {
		raw, err := cl.InvokeRaw(tctx(t), ch, ToolScreenshot, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("iVBOR")) || bytes.Contains(raw, []byte("PNG")) {
			t.Fatalf("the result carries image bytes: %s", raw)
		}
		var s Screenshot
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		shots = append(shots, s)
	}
	s := shots[2]
	if s.File.FileRef == "" || s.File.DownloadURL == "" || s.File.MimeType != "image/png" || s.File.Type != protocol.FileImage ||
		s.Width != 108 || s.Height != 240 || s.File.ExpiresAt == 0 {
		t.Fatalf("screenshot %+v", s)
	}
	code, body := download(t, cn.URL, s.File.DownloadURL)
	cfg, err := png.DecodeConfig(bytes.NewReader(body))
	if code != http.StatusOK || err != nil || cfg.Width != 108 {
		t.Fatalf("download: %d, %d bytes, %v", code, len(body), err)
	}
	if code, _ := download(t, cn.URL, shots[0].File.DownloadURL); code == http.StatusOK {
		t.Fatal("the oldest screenshot beyond the capacity still downloads")
	}
	if code, _ := download(t, cn.URL, shots[1].File.DownloadURL); code != http.StatusOK {
		t.Fatalf("the second screenshot: %d", code)
	}
}

func download(t *testing.T, base, u string) (int, []byte) {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = base + u
	}
	req, _ := http.NewRequestWithContext(tctx(t), http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestUIDump: the accessibility tree as a bounded list of usable
// elements, with the centre to tap; the device's temporary file is
// removed.
func TestUIDump(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	d, err := connectortest.Invoke[UIDump](tctx(t), cl.Client, ch, ToolUIDump, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Package != "com.google.android.apps.nexuslauncher" || d.Total != 2 || len(d.Nodes) != 2 || d.Truncated {
		t.Fatalf("dump %+v", d)
	}
	n := d.Nodes[0]
	if n.Text != "Settings" || n.X != 200 || n.Y != 300 || !n.Clickable || n.Bounds != [4]int{100, 200, 300, 400} {
		t.Fatalf("node %+v", n)
	}
	if d.Nodes[1].Text != "Search & more" || !d.Nodes[1].Editable {
		t.Fatalf("node %+v", d.Nodes[1])
	}
	var path string
	for _, c := range f.Commands(testSerial) {
		if c[0] == "uiautomator" {
			path = c[2]
		}
	}
	if !strings.HasPrefix(path, "/data/local/tmp/xconn-ui-") || !hasString(f.Commands(testSerial), "rm", "-f", path) {
		t.Fatalf("dump file %q not removed: %v", path, f.Commands(testSerial))
	}
	// A large screen is cut to MaxUINodes.
	var b strings.Builder
	b.WriteString(`<hierarchy rotation="1">`)
	for i := range MaxUINodes + 20 {
		fmt.Fprintf(&b, `<node text="item %d" clickable="true" bounds="[0,%d][10,%d]"/>`, i, i, i+1)
	}
	b.WriteString(`</hierarchy>`)
	f.Update(testSerial, func(d *adbtest.Device) { d.UIXML = b.String() })
	d, err = connectortest.Invoke[UIDump](tctx(t), cl.Client, ch, ToolUIDump, nil)
	if err != nil || len(d.Nodes) != MaxUINodes || !d.Truncated || d.Total != MaxUINodes+20 || d.Rotation != 1 {
		t.Fatalf("large dump: %d nodes, total %d, truncated %v, %v", len(d.Nodes), d.Total, d.Truncated, err)
	}
}

// TestControls: each control tool runs exactly the command it should,
// with its arguments as single words; bad arguments are refused before
// the device sees anything.
func TestControls(t *testing.T) {
	f, addr := newFake(t)
	f.Update(testSerial, func(d *adbtest.Device) { d.NoLauncher = []string{"com.android.settings"} })
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	hostile := `it's 100%s; rm -rf / && $(reboot) "x" > y`
	for i, tc := range []struct {
		tool string
		args string
		code protocol.Code
		want []string // the command the device ran, nil for none
	}{
		{ToolTap, `{"x":540,"y":1200}`, "", []string{"input", "tap", "540", "1200"}},
		{ToolTap, `{"x":2000,"y":500}`, "", []string{"input", "tap", "2000", "500"}}, // landscape
		{ToolTap, `{"x":1080,"y":2400}`, protocol.CodeInvalidArguments, nil},
		{ToolTap, `{"x":-1,"y":5}`, protocol.CodeInvalidArguments, nil},
		{ToolTap, `{"x":"5","y":5}`, protocol.CodeInvalidArguments, nil},
		{ToolSwipe, `{"x1":500,"y1":1800,"x2":500,"y2":600}`, "", []string{"input", "swipe", "500", "1800", "500", "600", "300"}},
		{ToolSwipe, `{"x1":1,"y1":1,"x2":2,"y2":2,"duration_ms":10}`, protocol.CodeInvalidArguments, nil},
		{ToolSwipe, `{"x1":1,"y1":1,"x2":2,"y2":9999}`, protocol.CodeInvalidArguments, nil},
		{ToolTextInput, fmt.Sprintf(`{"text":%q}`, hostile), "", []string{"input", "text", `s;%srm%s-rf%s/%s&&%s$(reboot)%s"x"%s>%sy`}},
		{ToolTextInput, `{"text":"héllo"}`, protocol.CodeInvalidArguments, nil},
		{ToolTextInput, `{"text":""}`, protocol.CodeInvalidArguments, nil},
		{ToolTextInput, fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", MaxTextInput+1)), protocol.CodeInvalidArguments, nil},
		{ToolKey, `{"key":"recents"}`, "", []string{"input", "keyevent", "KEYCODE_APP_SWITCH"}},
		{ToolKey, `{"key":"volume_down"}`, "", []string{"input", "keyevent", "KEYCODE_VOLUME_DOWN"}},
		{ToolKey, `{"key":"KEYCODE_CALL"}`, protocol.CodeInvalidArguments, nil},
		{ToolAppLaunch, `{"package":"com.google.android.apps.nexuslauncher"}`, "", []string{"monkey", "-p", "com.google.android.apps.nexuslauncher", "-c", "android.intent.category.LAUNCHER", "1"}},
		{ToolAppLaunch, `{"package":"com.example.absent"}`, protocol.CodeInvalidArguments, nil},
		{ToolAppLaunch, `{"package":"com.android.settings"}`, protocol.CodeToolInvokeFailed, []string{"monkey", "-p", "com.android.settings", "-c", "android.intent.category.LAUNCHER", "1"}}, // no launcher activity
		{ToolAppLaunch, `{"package":"x; reboot"}`, protocol.CodeInvalidArguments, nil},
	} {
		before := len(f.Commands(testSerial))
		res, err := cl.InvokeRaw(tctx(t), ch, tc.tool, json.RawMessage(tc.args), fmt.Sprintf("call-%d", i))
		if tc.code != "" {
			if !isCode(err, tc.code) {
				t.Errorf("%s %s: %s, %v; want %s", tc.tool, tc.args, res, err, tc.code)
			}
		} else if err != nil {
			t.Errorf("%s %s: %v", tc.tool, tc.args, err)
		}
		ran := f.Commands(testSerial)[before:]
		var acted [][]string
		for _, c := range ran {
			if c[0] == "input" || c[0] == "monkey" {
				acted = append(acted, c)
			}
		}
		switch {
		case tc.want == nil && len(acted) > 0:
			t.Errorf("%s %s: the device acted: %q", tc.tool, tc.args, acted)
		case tc.want != nil && !hasString(acted, tc.want...):
			t.Errorf("%s %s: ran %q, want %q", tc.tool, tc.args, acted, tc.want)
		}
	}
	// The hostile text reached the device as words of `input text`: the
	// spaces as %s, and "%s" split so that it is typed as written.
	var typed []string
	for _, c := range f.Commands(testSerial) {
		if len(c) == 3 && c[0] == "input" && c[1] == "text" {
			typed = append(typed, c[2])
		}
	}
	if got := strings.Join(typed, "|"); got != `it's%s100%|s;%srm%s-rf%s/%s&&%s$(reboot)%s"x"%s>%sy` {
		t.Fatalf("typed %q", got)
	}
	if strings.Contains(cn.Logs.String(), "rm -rf") || strings.Contains(cn.Logs.String(), "reboot") {
		t.Fatalf("the typed text is in the logs:\n%s", cn.Logs.String())
	}
}

// TestActIdempotent: a repeated tool_call_id returns the first result and
// does not tap twice; a new id taps again.
func TestActIdempotent(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	args := json.RawMessage(`{"x":10,"y":20}`)
	first, err := cl.InvokeRaw(tctx(t), ch, ToolTap, args, "tap-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.InvokeRaw(tctx(t), ch, ToolTap, args, "tap-1")
	if err != nil || string(again) != string(first) {
		t.Fatalf("repeat: %s, %v; want %s", again, err, first)
	}
	if n := f.CountCommands(testSerial, "input", "tap"); n != 1 {
		t.Fatalf("tapped %d times, want once", n)
	}
	if _, err := cl.InvokeRaw(tctx(t), ch, ToolTap, args, "tap-2"); err != nil {
		t.Fatal(err)
	}
	if n := f.CountCommands(testSerial, "input", "tap"); n != 2 {
		t.Fatalf("tapped %d times, want twice", n)
	}
}
