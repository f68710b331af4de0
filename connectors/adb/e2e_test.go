package adb

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/host"
)

// TestE2E is the kit's end-to-end against the fake ADB server: the
// conformance suite signed in with adb_device_binding, with android_tap as
// the tool it invokes twice (and repeats each time, for the idempotency
// checks), the device checks running and each distinct tap reaching the
// device once; a serial the server
// does not list refused; no secret in any log line or frame. The chat
// scenarios do not apply to a device.
func TestE2E(t *testing.T) {
	e2e.Run(t, e2e.Target{
		SignIn:    e2e.SignIn{Flow: FlowBinding, Input: login},
		BadSignIn: &e2e.BadSignIn{Input: map[string]string{"serial": "nothere"}, Message: "check that `adb devices` lists it"},
		Tool:      ToolTap,
		ToolArgs:  json.RawMessage(`{"x": 540, "y": 1200}`),
		MustPass:  []string{"device.descriptor"},
		New:       build(nil),
		Fake: func(tb testing.TB, _ string) *e2e.Fake {
			f, addr := newFake(tb)
			return &e2e.Fake{Addr: addr, Conformance: func(t *testing.T, _ *conformance.Report) {
				// Two calls, each repeated once: with a tool_call_id
				// (tool.idempotency) and without context
				// (tool.idempotency-request-id).
				if n := f.CountCommands(testSerial, "input", "tap", "540", "1200"); n != 2 {
					t.Errorf("the suite's taps reached the device %d times, want twice, once per distinct call", n)
				}
			}}
		},
	})
}

// TestHostScreenshot: an in-process xAgent host signs in with
// adb_device_binding and invokes android_screenshot: the result's file is
// downloaded by the host through the transfer plane and is a PNG.
func TestHostScreenshot(t *testing.T) {
	_, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	h := e2e.StartHost(t, e2e.HostOptions{Secrets: e2e.Secrets{testKey}})
	uc, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(cn.URL, testKey), e2e.SignIn{Flow: FlowBinding, Input: login})
	if err != nil {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	args := json.RawMessage(`{"connector_channel_id":"` + uc.ChannelID + `"}`)
	res, err := h.Invoke(tctx(t), "alice", "", ToolScreenshot, args, "call-shot-1", host.WithUserChannel(uc.ID))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].MimeType != "image/png" || len(res.FileErrors) != 0 {
		t.Fatalf("files %+v, errors %v, output %s", res.Files, res.FileErrors, res.Output)
	}
	if b, err := os.ReadFile(res.Files[0].Path); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", res.Files[0].Path)
	}
	var shot Screenshot
	if err := json.Unmarshal(res.Output, &shot); err != nil || shot.File.FileRef == "" || shot.Width == 0 {
		t.Fatalf("output %s (%v)", res.Output, err)
	}
}
