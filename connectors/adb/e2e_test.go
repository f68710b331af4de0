package adb

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/store"
)

// TestConformance: signed in with adb_device_binding against the fake ADB
// server, the suite passes every applicable MUST, with android_tap as the
// tool it invokes twice (with a tool_call_id and without context) and
// repeats each time, for the idempotency checks; the device checks run, and
// each distinct tap reached the device once.
func TestConformance(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	opts := conformance.Options{
		APIKey: testKey, AuthFlow: FlowBinding, AuthInput: login,
		Tool:     ToolTap,
		ToolArgs: json.RawMessage(`{"x": 540, "y": 1200}`),
		Out:      testLog{t},
	}
	rep, err := conformance.Check(t.Context(), cn.base, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Log(rep.Summary())
	if passed, failed, _ := rep.Counts(); !rep.OK() || failed != 0 || passed == 0 {
		t.Fatalf("failed %v:\n%s", rep.Failed(), text.String())
	}
	for _, id := range []string{"auth.authenticated", "tool.invoke", "device.descriptor"} {
		if r, ok := rep.Result(id); !ok || r.Status != conformance.Pass {
			t.Errorf("%s: %s %s (want pass)", id, r.Status, r.Reason)
		}
	}
	// Every other skip is an IM Profile check or a capability this
	// connector does not have.
	notDeclared := []conformance.Capability{conformance.CapHasPathPrefix, conformance.CapHasQRFlow,
		conformance.CapDeclaresIMv1, conformance.CapDeclaresIMv2, conformance.CapPublishesFiles, conformance.CapPublishesMessagePush,
		conformance.CapInboundHook}
	for _, r := range rep.Results {
		imOnly := strings.HasPrefix(r.ID, "imv2.") || strings.HasPrefix(r.ID, "imv1.")
		if req, _ := conformance.Lookup(r.ID); r.Status == conformance.Skip && !imOnly && !slices.Contains(notDeclared, req.Capability) {
			t.Errorf("%s (%s, %s) skipped: %s", r.ID, r.Level, req.Capability, r.Reason)
		}
	}
	// Two calls, each repeated once: with a tool_call_id
	// (tool.idempotency) and without context (tool.idempotency-request-id).
	if n := f.CountCommands(testSerial, "input", "tap", "540", "1200"); n != 2 {
		t.Errorf("the suite's taps reached the device %d times, want twice, once per distinct call", n)
	}
	if t.Failed() {
		t.Logf("report:\n%s", text.String())
	}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestHostScreenshot: an in-process xAgent host signs in with
// adb_device_binding and invokes android_screenshot: the result's file is
// downloaded by the host through the transfer plane and is a PNG.
func TestHostScreenshot(t *testing.T) {
	_, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	ctx := tctx(t)
	dir := t.TempDir()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Close(cctx); err != nil {
			t.Errorf("host close: %v", err)
		}
	}()
	c, err := h.Admit(ctx, cn.base, testKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.Connect(ctx, "alice", c.CardID, FlowBinding, login)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := s.Wait(ctx)
	if err != nil || !uc.Authenticated {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	args := json.RawMessage(`{"connector_channel_id":"` + uc.ChannelID + `"}`)
	res, err := h.Invoke(ctx, "alice", "", ToolScreenshot, args, "call-shot-1", host.WithUserChannel(uc.ID))
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
