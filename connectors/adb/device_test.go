package adb

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/protocol"
)

// TestSlowScreenshot: while a screenshot is held on the device,
// android_device_status (an observation) and a tap (a control) still
// answer on the same channel; the screenshot then completes.
func TestSlowScreenshot(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	release := f.HoldScreenshots(testSerial)
	defer release()
	type res struct {
		s   Screenshot
		err error
	}
	done := make(chan res, 1)
	go func() {
		s, err := connectortest.Invoke[Screenshot](tctx(t), cl.Client, ch, ToolScreenshot, nil)
		done <- res{s, err}
	}()
	e2e.Eventually(t, "the screenshot to be held", func() bool { return f.HeldScreenshots(testSerial) == 1 })
	st, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil)
	if err != nil || st.Model != "Pixel 7" {
		t.Fatalf("status during a slow screenshot: %+v, %v", st, err)
	}
	if _, err := cl.InvokeRaw(tctx(t), ch, ToolKey, json.RawMessage(`{"key":"home"}`), "k-1"); err != nil {
		t.Fatalf("key during a slow screenshot: %v", err)
	}
	select {
	case r := <-done:
		t.Fatalf("the screenshot answered while held: %+v", r)
	default:
	}
	// The progress push of the long call arrived before its ack.
	if _, err := cl.NextMatch(tctx(t), func(env *protocol.Envelope) bool {
		var p protocol.ToolProgressPayload
		return env.Type == protocol.TypeToolProgressPush && env.DecodePayload(&p) == nil && p.ToolID == ToolScreenshot
	}); err != nil {
		t.Fatalf("no tool.progress.push: %v", err)
	}
	release()
	r := <-done
	if r.err != nil || r.s.File.FileRef == "" {
		t.Fatalf("screenshot: %+v, %v", r.s, r.err)
	}
}

// TestScreenshotTimeout: a screenshot held past ScreenshotTimeout fails
// with device_command_timeout, distinct from offline and permission.
func TestScreenshotTimeout(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", func(o *Options) { o.ScreenshotTimeout = 300 * time.Millisecond })
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	release := f.HoldScreenshots(testSerial)
	defer release()
	_, err := cl.InvokeRaw(tctx(t), ch, ToolScreenshot, nil, "")
	if !isCode(err, connector.CodeDeviceCommandTimeout) {
		t.Fatalf("held screenshot: %v", err)
	}
	// The device is fine: the channel stays connected.
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceVanishes: a device unplugged in the middle of a screenshot
// fails the call with device_offline, and the Descriptor is corrected
// and pushed (offline, tools unavailable); calls are then refused with
// device_offline; when the device comes back the channel is connected
// again.
func TestDeviceVanishes(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	drainPushes(cl)
	f.VanishOn(testSerial, "screencap")
	_, err := cl.InvokeRaw(tctx(t), ch, ToolScreenshot, nil, "")
	if !isCode(err, connector.CodeDeviceOffline) {
		t.Fatalf("screenshot of a vanishing device: %v", err)
	}
	d := descriptorWith(t, cl, protocol.StatusOffline)
	for _, ts := range d.Tools {
		if ts.Status != protocol.ToolUnavailable || ts.Reason == "" {
			t.Fatalf("tool while offline: %+v", ts)
		}
	}
	for tool, args := range map[string]string{ToolStatus: `{}`, ToolTap: `{"x":1,"y":1}`} {
		if _, err := cl.InvokeRaw(tctx(t), ch, tool, json.RawMessage(args), "off-"+tool); !isCode(err, connector.CodeDeviceOffline) {
			t.Fatalf("%s while offline: %v", tool, err)
		}
	}
	drainPushes(cl)
	f.AddDevice(adbtest.Device{Serial: testSerial, Model: "Pixel 7"})
	d = descriptorWith(t, cl, protocol.StatusConnected)
	for _, ts := range d.Tools {
		if ts.Status != protocol.ToolAvailable {
			t.Fatalf("tool after the device came back: %+v", ts)
		}
	}
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceUnauthorised: a device that withdraws its authorisation
// (USB debugging authorisations revoked) makes the tools denied by the
// target with permission denied and the calls device_permission_denied;
// accepting the prompt again restores the channel.
func TestDeviceUnauthorised(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	drainPushes(cl)
	f.SetState(testSerial, "unauthorized")
	d := descriptorWith(t, cl, protocol.StatusOffline)
	for _, ts := range d.Tools {
		if ts.Status != protocol.ToolDeniedByTarget || ts.TargetPermissionState != protocol.PermissionDenied || !strings.Contains(ts.Reason, "USB debugging") {
			t.Fatalf("tool while unauthorised: %+v", ts)
		}
	}
	if _, err := cl.InvokeRaw(tctx(t), ch, ToolScreenshot, nil, ""); !isCode(err, connector.CodeDevicePermissionDenied) {
		t.Fatalf("screenshot while unauthorised: %v", err)
	}
	drainPushes(cl)
	f.SetState(testSerial, "device")
	descriptorWith(t, cl, protocol.StatusConnected)
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreVerifiesDevice: after a restart with the device unplugged, the
// restored channel is offline, not connected, until its device answers.
func TestRestoreVerifiesDevice(t *testing.T) {
	f, addr := newFake(t)
	data := t.TempDir()
	cn := startConn(t, data, addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	cl.Close()
	cn.Stop()
	f.Remove(testSerial)
	cn = startConn(t, data, addr, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	open, err := cl.Open(tctx(t), ch)
	if err != nil {
		t.Fatal(err)
	}
	if st := open.ConnectionDescriptor.Connection.Status; st != protocol.StatusOffline {
		t.Fatalf("restored channel without its device: %s", st)
	}
	if _, err := cl.InvokeRaw(tctx(t), ch, ToolStatus, nil, ""); !isCode(err, connector.CodeDeviceOffline) {
		t.Fatalf("status of a restored channel without its device: %v", err)
	}
	drainPushes(cl)
	f.AddDevice(adbtest.Device{Serial: testSerial, Model: "Pixel 7"})
	descriptorWith(t, cl, protocol.StatusConnected)
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
}

// TestDisconnectGrace: a device missing for less than DisconnectGrace
// leaves the channel connected however many polls see it missing; when
// it is back, nothing was pushed. Without grace the first poll marks it
// offline (TestDeviceVanishes).
func TestDisconnectGrace(t *testing.T) {
	f, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", func(o *Options) { o.DisconnectGrace = time.Hour })
	cl := cn.Dial(t)
	ch := signedIn(t, cl)
	drainPushes(cl)
	f.Remove(testSerial)
	seen := f.Requests()
	e2e.Eventually(t, "ten polls of the device list", func() bool { return f.Requests() >= seen+10 })
	env, err := cl.Request(tctx(t), protocol.TypeDescriptorGet, ch, protocol.EmptyPayload{})
	if err != nil {
		t.Fatal(err)
	}
	var p protocol.DescriptorPayload
	if err := env.DecodePayload(&p); err != nil || p.ConnectionDescriptor.Connection.Status != protocol.StatusConnected {
		t.Fatalf("within the grace: %+v, %v", p.ConnectionDescriptor, err)
	}
	f.AddDevice(adbtest.Device{Serial: testSerial, Model: "Pixel 7"})
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
	// A push of the connected state left over from the sign-in may still
	// arrive; what must not is one that reports the device gone.
	offline := func(env *protocol.Envelope) bool {
		var p protocol.DescriptorPayload
		return env.Type == protocol.TypeDescriptorPush && env.DecodePayload(&p) == nil && p.ConnectionDescriptor != nil &&
			p.ConnectionDescriptor.Connection.Status != protocol.StatusConnected
	}
	if _, err := cl.NextMatch(cancelled(), offline); err == nil {
		t.Fatal("a Descriptor reporting the device gone was pushed within the grace")
	}
}
