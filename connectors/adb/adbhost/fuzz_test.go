package adbhost_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/connectors/adb/adbtest"
)

// FuzzParseDevices: any payload parses without panicking into at most
// MaxDevices devices, each with a serial and a state free of whitespace
// (except "no permissions").
func FuzzParseDevices(f *testing.F) {
	f.Add([]byte("emulator-5554          device product:sdk model:M device:d transport_id:1\n"))
	f.Add([]byte("R58 unauthorized usb:1-1 transport_id:2\nx\tno permissions (udev); see [http://x]\n"))
	f.Add([]byte("\r\n \t\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := adbhost.ParseDevices(b)
		if len(ds) > adbhost.MaxDevices {
			t.Fatalf("%d devices", len(ds))
		}
		if err != nil && len(ds) > 0 && len(ds) < adbhost.MaxDevices {
			t.Fatalf("devices with an error: %v", err)
		}
		for _, d := range ds {
			if d.Serial == "" || d.State == "" || bytes.ContainsAny([]byte(d.Serial), " \t\n") {
				t.Fatalf("device %+v", d)
			}
		}
	})
}

// FuzzReadStatus: any answer is OKAY, a classified FAIL or an error, never
// a panic; a FAIL message is at most MaxPayload bytes.
func FuzzReadStatus(f *testing.F) {
	f.Add([]byte("OKAY"))
	f.Add([]byte("FAIL0010device not found"))
	f.Add([]byte("FAILffff"))
	f.Add([]byte("OKAY0004002a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if err := adbhost.ReadStatus(r); err == nil && !bytes.HasPrefix(b, []byte("OKAY")) {
			t.Fatalf("%q accepted", b)
		}
		if p, err := adbhost.ReadPayload(bytes.NewReader(b)); err == nil && len(p) > adbhost.MaxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
	})
}

// FuzzQuote: every string survives quoting: a shell splitting the command
// line gets back exactly the argument vector, with no metacharacter left
// unquoted.
func FuzzQuote(f *testing.F) {
	f.Add("input", "it's; rm -rf / $(id) `x` \"y\" > z")
	f.Add("", "%s")
	f.Add("a b", "\\'")
	f.Fuzz(func(t *testing.T, a, b string) {
		if bytes.ContainsAny([]byte(a+b), "\x00\n") {
			return // exec: requests are single lines; the connector refuses these
		}
		argv := []string{"cmd", a, b}
		got, err := adbtest.SplitCommand(adbhost.CommandLine(argv))
		if err != nil || !slices.Equal(got, argv) {
			t.Fatalf("%q -> %q -> %q, %v", argv, adbhost.CommandLine(argv), got, err)
		}
	})
}
