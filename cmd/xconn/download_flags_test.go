package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestPrivateDownloadsFlag: --allow-private-downloads is on xconn host and
// xconn demo, XCONN_ALLOW_PRIVATE_DOWNLOADS sets it when the flag is not
// given, the flag wins over the environment, and a value that is not a
// boolean is a usage error (exit 2).
func TestPrivateDownloadsFlag(t *testing.T) {
	for _, cmd := range []string{"host", "demo"} {
		if code, out, _ := xconn(t, "", cmd, "--help"); code != 0 || !strings.Contains(out, "--allow-private-downloads") || !strings.Contains(out, envAllowPrivateDownloads) {
			t.Errorf("xconn %s --help: exit %d, lacks the flag:\n%s", cmd, code, out)
		}
	}
	resolve := func(args ...string) (bool, error) {
		var p privateDownloadsFlag
		c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		p.register(c.Flags())
		if err := c.ParseFlags(args); err != nil {
			return false, err
		}
		err := p.resolve(c)
		return p.allow, err
	}
	t.Setenv(envAllowPrivateDownloads, "true")
	if allow, err := resolve(); !allow || err != nil {
		t.Errorf("env true: %v %v", allow, err)
	}
	if allow, err := resolve("--allow-private-downloads=false"); allow || err != nil {
		t.Errorf("env true, flag false: %v %v", allow, err)
	}
	t.Setenv(envAllowPrivateDownloads, "")
	if allow, err := resolve(); allow || err != nil {
		t.Errorf("default: %v %v", allow, err)
	}
	t.Setenv(envAllowPrivateDownloads, "maybe")
	code, _, stderr := xconn(t, "", "host", "http://127.0.0.1:1", "--data", t.TempDir())
	if code != 2 || !strings.Contains(stderr, envAllowPrivateDownloads) {
		t.Errorf("env maybe: exit %d, stderr %s; want a usage error naming it", code, stderr)
	}
}
