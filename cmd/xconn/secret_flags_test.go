package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func writeSecretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAPIKeyFlags(t *testing.T) {
	keyFile := writeSecretFile(t, "file-key-0123456789abcdef\n")
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{"flag", []string{"--api-key", "flag-key-0123456789"}, "flag-key-0123456789", ""},
		{"file", []string{"--api-key-file", keyFile}, "file-key-0123456789abcdef", ""},
		{"CRLF file", []string{"--api-key-file", writeSecretFile(t, "crlf-key-0123456789\r\nignored\n")}, "crlf-key-0123456789", ""},
		{"both", []string{"--api-key", "k", "--api-key-file", keyFile}, "", "not both"},
		{"both, file first", []string{"--api-key-file", keyFile, "--api-key", "k"}, "", "not both"},
		{"missing file", []string{"--api-key-file", filepath.Join(t.TempDir(), "nope")}, "", "cannot read"},
		{"empty file", []string{"--api-key-file", writeSecretFile(t, "\n")}, "", "holds no key"},
		{"huge file", []string{"--api-key-file", writeSecretFile(t, strings.Repeat("k", maxSecretFile+1))}, "", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			var key string
			registerAPIKey(fs, &key, "key")
			err := fs.Parse(tt.args)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v, want an error with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "file-key-0123456789abcdef") {
					t.Fatalf("error quotes the key: %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case key != tt.want:
				t.Fatalf("key = %q, want %q", key, tt.want)
			}
		})
	}
}

func TestAuthInputFlags(t *testing.T) {
	file := writeSecretFile(t, "# sign-in\naccess_code=s3cret=with=equals\n\nroom=lobby\r\n")
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var inputs []string
	registerAuthInputs(fs, &inputs)
	if err := fs.Parse([]string{"--auth-input-file", file, "--auth-input", "name=Ann"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"access_code=s3cret=with=equals", "room=lobby", "name=Ann"}
	if !slices.Equal(inputs, want) {
		t.Fatalf("inputs = %q, want %q", inputs, want)
	}
	in, err := parseInputs(inputs)
	if err != nil || in["access_code"] != "s3cret=with=equals" || in["room"] != "lobby" {
		t.Fatalf("parseInputs = %v, %v", in, err)
	}
	bad := writeSecretFile(t, "no-equals-secret-value\n")
	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	registerAuthInputs(fs, &inputs)
	err = fs.Parse([]string{"--auth-input-file", bad})
	if err == nil || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), "no-equals-secret-value") {
		t.Fatalf("a malformed line: %v, want an error naming the line and not the value", err)
	}
}

// TestServeRefusesBothKeyForms: giving --api-key and --api-key-file is a
// usage error (exit 2).
func TestServeRefusesBothKeyForms(t *testing.T) {
	var out, errOut strings.Builder
	code := run(t.Context(), []string{"serve", "webchat", "--api-key", "k", "--api-key-file", writeSecretFile(t, "key-0123456789abcdef\n")},
		strings.NewReader(""), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "not both") {
		t.Fatalf("exit %d, stderr %q; want 2 and \"not both\"", code, errOut.String())
	}
}

// FuzzParseAuthInputLines: every line returned is key=value with a key,
// and an error never quotes the input.
func FuzzParseAuthInputLines(f *testing.F) {
	f.Add([]byte("# c\nroom=lobby\r\naccess_code=a=b\n\n"))
	f.Add([]byte("secret-without-equals\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := parseAuthInputLines(b)
		if err != nil {
			if len(b) > 8 && strings.Contains(err.Error(), string(b)) {
				t.Fatalf("error quotes the input: %v", err)
			}
			return
		}
		for _, l := range lines {
			if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
				t.Fatalf("line %q has no key=value", l)
			}
		}
	})
}
