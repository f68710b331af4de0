package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Secret command-line input without the process list.
//
// A value given as --api-key or --auth-input key=value is visible to every
// user of the machine in the process list (ps, /proc/PID/cmdline). So each
// secret has a file form (--api-key-file, --auth-input-file) and the API
// key an environment form (XCONN_API_KEY); the plain flags stay for
// loopback experiments.

// maxSecretFile bounds a file read by --api-key-file or --auth-input-file.
const maxSecretFile = 64 << 10

// apiKeyValue is the pflag.Value of --api-key and of --api-key-file: both
// write the key to dst, and giving both is a usage error (exit 2).
type apiKeyValue struct {
	dst    *string
	source *string // the flag that set dst, shared by the pair
	name   string
	file   bool
}

func (v *apiKeyValue) String() string { return "" } // never print a key in usage or errors
func (v *apiKeyValue) Type() string {
	if v.file {
		return "path"
	}
	return "string"
}

func (v *apiKeyValue) Set(s string) error {
	if *v.source != "" && *v.source != v.name {
		return fmt.Errorf("use --%s or --%s, not both", *v.source, v.name)
	}
	*v.source = v.name
	if !v.file {
		*v.dst = s
		return nil
	}
	key, err := readSecretFile(s)
	if err != nil {
		return err
	}
	if err := checkSecretFileMode(s); err != nil { // as the connectors refuse their own key files
		return err
	}
	if key == "" {
		return fmt.Errorf("%s holds no key", s)
	}
	*v.dst = key
	return nil
}

// registerAPIKey adds --api-key and --api-key-file to fs, both writing
// the system API key to dst; help says what the key is for. The
// environment form XCONN_API_KEY is read by the command when neither is
// given.
func registerAPIKey(fs *pflag.FlagSet, dst *string, help string) {
	source := new(string)
	fs.Var(&apiKeyValue{dst: dst, source: source, name: "api-key"}, "api-key",
		help+" (visible in the process list: prefer --api-key-file or env XCONN_API_KEY)")
	fs.Var(&apiKeyValue{dst: dst, source: source, name: "api-key-file", file: true}, "api-key-file",
		"file holding the system API key (its first line; mode 0600: a file others may read is refused; default: env XCONN_API_KEY)")
}

// readSecretFile returns the first line of a small file, without its line
// end. Errors name the file, never its content.
func readSecretFile(path string) (string, error) {
	b, err := readSmallFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimRight(line, "\r"), nil
}

func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	b := make([]byte, maxSecretFile+1)
	n, err := f.Read(b)
	for err == nil && n < len(b) {
		var m int
		m, err = f.Read(b[n:])
		n += m
	}
	if n > maxSecretFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	}
	return b[:n], nil
}

// authInputFileValue is the pflag.Value of --auth-input-file: each
// non-empty line of the file that is not a comment (#) is one key=value
// form input, appended to dst as if given with --auth-input (so a malformed
// line is refused the same way, without quoting its value).
type authInputFileValue struct{ dst *[]string }

func (v *authInputFileValue) String() string { return "" }
func (v *authInputFileValue) Type() string   { return "path" }

func (v *authInputFileValue) Set(path string) error {
	b, err := readSmallFile(path)
	if err != nil {
		return err
	}
	lines, err := parseAuthInputLines(b)
	if err != nil {
		return fmt.Errorf("%s %w", path, err)
	}
	*v.dst = append(*v.dst, lines...)
	return nil
}

// parseAuthInputLines returns the key=value lines of an --auth-input-file
// (blank lines and # comments skipped, CR LF accepted). An error names the
// line number, never its content.
func parseAuthInputLines(b []byte) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxSecretFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if k, _, ok := strings.Cut(line, "="); !ok || k == "" {
			return nil, fmt.Errorf("line %d: want key=value", n)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("unreadable: %w", err)
	}
	return out, nil
}

// authInputValue is the pflag.Value of --auth-input: each use appends
// one key=value to dst (shared with --auth-input-file, in command-line
// order).
type authInputValue struct{ dst *[]string }

func (v *authInputValue) String() string { return "" } // never print input values
func (v *authInputValue) Type() string   { return "stringArray" }

func (v *authInputValue) Set(s string) error {
	*v.dst = append(*v.dst, s)
	return nil
}

// registerAuthInputs adds --auth-input and --auth-input-file to fs, both
// appending form inputs to dst.
func registerAuthInputs(fs *pflag.FlagSet, dst *[]string) {
	fs.Var(&authInputValue{dst: dst}, "auth-input",
		"form input of the auth flow as key=value (repeatable; a secret value shows in the process list: prefer --auth-input-file)")
	fs.Var(&authInputFileValue{dst: dst}, "auth-input-file",
		"file of form inputs, one key=value per line (# comments), for secret fields that --auth-input would show in the process list (repeatable)")
}
