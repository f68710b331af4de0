package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBlocks returns the ```sh blocks of the README's section that
// starts with heading ("" for the text before the first "## "), in order.
func readmeBlocks(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if heading != "" {
		i := strings.Index(text, "\n"+heading+"\n")
		if i < 0 {
			t.Fatalf("README.md has no %q section", heading)
		}
		text = text[i+1+len(heading):]
	}
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	var blocks [][]string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		blocks = append(blocks, lines)
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md: no sh block in %q", heading)
	}
	return blocks
}

// command drops the trailing "# comment" of a README line.
func command(line string) string {
	if i := strings.Index(line, "  #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// TestReadmeFirstBlock: the README starts with the two commands that work
// on a fresh machine with only Go, the demo and the tests, and its test
// command is the one .ci/run runs.
func TestReadmeFirstBlock(t *testing.T) {
	first := readmeBlocks(t, "")[0]
	if len(first) != 2 || command(first[0]) != "go run ./cmd/xconn demo" || !strings.HasPrefix(command(first[1]), "go test ") {
		t.Fatalf("README's first block %q: want the demo and the test command", first)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(command(first[1])) + `$`).Match(ci) {
		t.Fatalf(".ci/run does not run the README's test command %q", command(first[1]))
	}
}

// TestReadmeModelLines: the README's model commands parse as they are
// written (their flags exist; --help stops before anything runs).
func TestReadmeModelLines(t *testing.T) {
	for _, line := range readmeBlocks(t, "## A model behind the chat")[0] {
		args := strings.Fields(command(line))
		for len(args) > 0 && strings.Contains(args[0], "=") { // OPENAI_API_KEY=...
			args = args[1:]
		}
		if len(args) == 0 || args[0] != "xconn" {
			t.Fatalf("README model line %q does not run xconn", line)
		}
		if code, _, errOut := xconn(t, "", append(args[1:], "--help")...); code != 0 {
			t.Errorf("%q: exit %d: %s", line, code, errOut)
		}
	}
}

// TestReadmeInstall runs the README's install lines, as written there, in
// a shell with a temporary GOBIN, and then the installed "xconn version"
// (issue 34, item 1: the install step it gave answered 403).
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary (-short)")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	lines := readmeBlocks(t, "## Install")[0]
	if !strings.HasPrefix(lines[0], "go install ./cmd/xconn") {
		t.Fatalf("README's install block %q does not start with go install ./cmd/xconn", lines)
	}
	gobin := t.TempDir()
	script := "set -e\n" + strings.Join(lines, "\n") + "\ncommand -v xconn\n"
	cmd := exec.Command(sh, "-c", script)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's install lines failed: %v\n%s", err, out.String())
	}
	installed := filepath.Join(gobin, "xconn")
	if !strings.Contains(out.String(), installed+"\n") {
		t.Fatalf("xconn on PATH is not the one just installed in %s:\n%s", gobin, out.String())
	}
	v, err := exec.Command(installed, "version").CombinedOutput()
	if err != nil || !regexp.MustCompile(`^xconn \S+ \(tag `).Match(v) {
		t.Fatalf("%s version: %v: %s", installed, err, v)
	}
	if !strings.Contains(out.String(), string(v)) {
		t.Fatalf("the README's \"xconn version\" printed something else:\n%s\nwant %s", out.String(), v)
	}
}
