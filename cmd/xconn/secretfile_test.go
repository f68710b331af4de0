package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFileModeChecked: a key file that other users may read is refused
// when read back, not used (issue 20, item 8: the web chat signing key's
// mode was not checked).
func TestKeyFileModeChecked(t *testing.T) {
	for _, c := range []struct {
		file string
		args []string
	}{
		{serveSigningKeyFile, []string{"serve", "webchat"}},
		{demoAPIKeyFile, []string{"demo"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			content := bytes.Repeat([]byte{'7'}, 32)
			if c.file == demoAPIKeyFile {
				content = []byte(strings.Repeat("ab", 32))
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
				t.Fatal(err)
			}
			code, out, errOut := xconn(t, "", append(c.args, "--data", dir, "--listen", "127.0.0.1:0")...)
			if code != 1 || !strings.Contains(errOut, "has mode 0644") || !strings.Contains(errOut, "chmod 600") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1 naming the mode", code, out, errOut)
			}
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := checkSecretFileMode(path); err != nil {
				t.Fatalf("mode 0600 refused: %v", err)
			}
		})
	}
}
