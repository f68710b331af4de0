package adbhost_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/connectors/adb/adbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T) (*adbtest.Server, *adbhost.Client) {
	t.Helper()
	f := adbtest.New()
	addr := f.Start()
	t.Cleanup(f.Close)
	c, err := adbhost.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestVersionAndDevices: host:version and host:devices-l against the fake,
// with a usable, an unauthorised and an offline device.
func TestVersionAndDevices(t *testing.T) {
	f, c := start(t)
	f.AddDevice(adbtest.Device{Serial: "emulator-5554", Model: "sdk gphone64"})
	f.AddDevice(adbtest.Device{Serial: "R58M123ABC", State: "unauthorized"})
	f.AddDevice(adbtest.Device{Serial: "192.168.1.20:5555", State: "offline"})
	v, err := c.Version(ctx(t))
	if err != nil || v != adbtest.Version {
		t.Fatalf("version %d, %v", v, err)
	}
	ds, err := c.Devices(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []adbhost.Device{
		{Serial: "emulator-5554", State: "device", Product: "panther", Model: "sdk_gphone64", DeviceName: "panther", TransportID: "1", USB: "1-1"},
		{Serial: "R58M123ABC", State: "unauthorized", TransportID: "2", USB: "1-2"},
		{Serial: "192.168.1.20:5555", State: "offline", TransportID: "3", USB: "1-3"},
	}
	if !slices.Equal(ds, want) {
		t.Fatalf("devices\n%+v\nwant\n%+v", ds, want)
	}
	if _, err := c.Device(ctx(t), "nope"); !isKind(err, adbhost.KindNotFound) {
		t.Fatalf("unknown serial: %v", err)
	}
}

func isKind(err error, k adbhost.Kind) bool {
	got, ok := adbhost.KindOf(err)
	return ok && got == k
}

// TestExec: output streams until the device closes; arguments with shell
// metacharacters reach the device as one word each; FAIL answers are
// classified; the output limit holds.
func TestExec(t *testing.T) {
	f, c := start(t)
	f.AddDevice(adbtest.Device{Serial: "s1", Model: "Pixel 8"})
	f.AddDevice(adbtest.Device{Serial: "s2", State: "unauthorized"})
	f.AddDevice(adbtest.Device{Serial: "s3", State: "offline"})
	out, err := c.Exec(ctx(t), "s1", 1<<10, "getprop", "ro.product.model")
	if err != nil || string(out) != "Pixel 8\n" {
		t.Fatalf("getprop: %q, %v", out, err)
	}
	hostile := `it's; rm -rf / && echo $HOME "x" | cat > /sdcard/y` + "`id`"
	if _, err := c.Exec(ctx(t), "s1", 1<<10, "input", "text", hostile); err != nil {
		t.Fatal(err)
	}
	cmds := f.Commands("s1")
	if last := cmds[len(cmds)-1]; !slices.Equal(last, []string{"input", "text", hostile}) {
		t.Fatalf("device ran %q", last)
	}
	png, err := c.Exec(ctx(t), "s1", 1<<20, "screencap", "-p")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screencap: %d bytes, %v", len(png), err)
	}
	if out, err := c.Exec(ctx(t), "s1", 8, "screencap", "-p"); !errors.Is(err, adbhost.ErrOutputLimit) || len(out) != 8 {
		t.Fatalf("limit: %d bytes, %v", len(out), err)
	}
	for _, tc := range []struct {
		serial string
		kind   adbhost.Kind
	}{{"s2", adbhost.KindUnauthorized}, {"s3", adbhost.KindOffline}, {"gone", adbhost.KindNotFound}} {
		if _, err := c.Exec(ctx(t), tc.serial, 1<<10, "wm", "size"); !isKind(err, tc.kind) {
			t.Errorf("%s: %v, want %v", tc.serial, err, tc.kind)
		}
	}
}

// TestExecTimeoutAndVanish: a held screenshot ends with the context's
// deadline; a device that vanishes mid-output gives a short read and is
// then not found.
func TestExecTimeoutAndVanish(t *testing.T) {
	f, c := start(t)
	f.AddDevice(adbtest.Device{Serial: "s1"})
	release := f.HoldScreenshots("s1")
	defer release()
	short, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(short, "s1", 1<<20, "screencap", "-p"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held screencap: %v", err)
	}
	release()
	full, err := c.Exec(ctx(t), "s1", 1<<20, "screencap", "-p")
	if err != nil {
		t.Fatal(err)
	}
	f.VanishOn("s1", "screencap")
	part, err := c.Exec(ctx(t), "s1", 1<<20, "screencap", "-p")
	if err != nil || len(part) >= len(full) {
		t.Fatalf("vanished: %d of %d bytes, %v", len(part), len(full), err)
	}
	if _, err := c.Device(ctx(t), "s1"); !isKind(err, adbhost.KindNotFound) {
		t.Fatalf("after vanishing: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	f := adbtest.New()
	addr := f.Start()
	f.Close()
	c, _ := adbhost.New(addr)
	if _, err := c.Devices(ctx(t)); !isKind(err, adbhost.KindUnreachable) {
		t.Fatalf("closed server: %v", err)
	}
	if _, err := adbhost.New("no-port"); err == nil {
		t.Fatal("an address without a port was accepted")
	}
}

func TestParseDevices(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []adbhost.Device
		wantErr bool
	}{
		{"", nil, false},
		{"\n\n", nil, false},
		{"abc\tdevice\n", []adbhost.Device{{Serial: "abc", State: "device"}}, false},
		{"abc                    device product:p model:M device:d transport_id:7\r\n", []adbhost.Device{{Serial: "abc", State: "device", Product: "p", Model: "M", DeviceName: "d", TransportID: "7"}}, false},
		{"x no permissions (udev); see [http://a:b] usb:1 model:zz\n", []adbhost.Device{{Serial: "x", State: "no permissions"}}, false},
		{"lonely\n", nil, true},
		{"x unauthorized junk noval\n", []adbhost.Device{{Serial: "x", State: "unauthorized"}}, false},
	} {
		got, err := adbhost.ParseDevices([]byte(tc.in))
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %+v, %v; want %+v (err %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	many := strings.Repeat("s device\n", adbhost.MaxDevices+1)
	if got, err := adbhost.ParseDevices([]byte(many)); err == nil || len(got) != adbhost.MaxDevices {
		t.Fatalf("too many: %d, %v", len(got), err)
	}
}

func TestReadStatus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind adbhost.Kind
		ok   bool
	}{
		{"OKAY", 0, true},
		{"FAIL000edevice offline", adbhost.KindOffline, false},
		{"FAIL0016device 'abc' not found", adbhost.KindNotFound, false},
		{"FAIL0000", adbhost.KindFail, false},
		{"FAILzzzz", adbhost.KindProtocol, false},
		{"WHAT", adbhost.KindProtocol, false},
	} {
		err := adbhost.ReadStatus(strings.NewReader(tc.in))
		if tc.ok {
			if err != nil {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		if k, ok := adbhost.KindOf(err); !ok || k != tc.kind {
			t.Errorf("%q: %v, want kind %v", tc.in, err, tc.kind)
		}
	}
	if err := adbhost.ReadStatus(strings.NewReader("OK")); err == nil {
		t.Error("a short status was accepted")
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "''"},
		{"KEYCODE_BACK", "KEYCODE_BACK"},
		{"a%sb", "a%sb"},
		{"it's", `'it'\''s'`},
		{"a b", "'a b'"},
		{"A=B", "'A=B'"},
		{"~", "'~'"},
	} {
		if got := adbhost.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := adbhost.EncodeRequest("host:version"); got != "000chost:version" {
		t.Errorf("EncodeRequest: %q", got)
	}
}
