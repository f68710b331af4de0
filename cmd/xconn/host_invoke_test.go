package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

const invokeTestKey = "host-invoke-test-api-key-0123456789"

// verifyNoLeaks checks for leaked goroutines once the test and its
// cleanups (the connectors it started) are done.
func verifyNoLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// "xconn host --invoke TOOL --args JSON" signs in (or reuses the stored
// channel), runs one call on that channel, prints the ack as JSON on stdout
// and exits 0, 1 on a tool error, 2 on a usage error.
func TestHostInvoke(t *testing.T) {
	verifyNoLeaks(t)
	fx := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: invokeTestKey})
	dataDir := t.TempDir()
	base := []string{"host", fx.URL, "--api-key", invokeTestKey, "--data", dataDir,
		"--auth-flow", sdkfixture.FlowTokenForm, "--auth-input", "token=good-token-value"}
	type out struct {
		ToolID    string          `json:"tool_id"`
		ChannelID string          `json:"connector_channel_id"`
		Result    json.RawMessage `json:"result"`
		Error     *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		check  func(t *testing.T, o out)
		stderr string
	}{
		{"echo", []string{"--invoke", sdkfixture.ToolEcho, "--args", `{"connector_channel_id":"ignored","text":"hi"}`}, 0, func(t *testing.T, o out) {
			var r sdkfixture.EchoOut
			if err := json.Unmarshal(o.Result, &r); err != nil || r.Echo != "hi" || r.Channel != o.ChannelID || o.ToolID != sdkfixture.ToolEcho {
				t.Fatalf("output %+v (%s)", o, o.Result)
			}
		}, `-> tool.invoke`},
		{"tool error", []string{"--invoke", sdkfixture.ToolLeakError, "--args", `{"connector_channel_id":"x"}`}, 1, func(t *testing.T, o out) {
			if o.Error == nil || o.Error.Code != string(protocol.CodeToolInvokeFailed) || o.Result != nil {
				t.Fatalf("output %+v", o)
			}
		}, ""},
		{"unknown tool", []string{"--invoke", "no_such_tool"}, 1, func(t *testing.T, o out) {
			if o.Error == nil || o.Error.Code != string(protocol.CodeUnknownTool) {
				t.Fatalf("output %+v", o)
			}
		}, ""},
		{"invalid arguments", []string{"--invoke", sdkfixture.ToolSum, "--args", `{"a":"no"}`}, 1, func(t *testing.T, o out) {
			if o.Error == nil || o.Error.Code != string(protocol.CodeInvalidArguments) {
				t.Fatalf("output %+v", o)
			}
		}, ""},
		{"built-in channel list", []string{"--invoke", "connector_channels_list"}, 0, func(t *testing.T, o out) {
			var r struct {
				Channels []struct {
					ChannelID string `json:"connector_channel_id"`
					CardID    string `json:"connector_card_id"`
				} `json:"channels"`
			}
			if json.Unmarshal(o.Result, &r) != nil || len(r.Channels) != 1 || r.Channels[0].CardID != sdkfixture.FixtureCardID {
				t.Fatalf("output %+v (%s)", o, o.Result)
			}
		}, ""},
		{"args not JSON", []string{"--invoke", sdkfixture.ToolEcho, "--args", `{text:`}, 2, nil, "--args must be a JSON object"},
		{"args not an object", []string{"--invoke", sdkfixture.ToolEcho, "--args", `["x"]`}, 2, nil, "--args must be a JSON object"},
		{"args without invoke", []string{"--args", `{}`}, 2, nil, "--args needs --invoke"},
		{"bad download origin", []string{"--invoke", sdkfixture.ToolEcho, "--download-origin", "ftp://files.example"}, 2, nil, "--download-origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := xconn(t, "", append(append([]string(nil), base...), tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("stderr lacks %q: %s", tt.stderr, stderr)
			}
			if strings.Contains(stdout+stderr, fx.Opts.Canary) || strings.Contains(stdout+stderr, invokeTestKey) {
				t.Fatal("a secret was printed")
			}
			if tt.check == nil {
				if stdout != "" {
					t.Fatalf("usage error printed on stdout: %s", stdout)
				}
				return
			}
			var o out
			if err := json.Unmarshal([]byte(stdout), &o); err != nil {
				t.Fatalf("stdout is not one JSON object (%v): %s", err, stdout)
			}
			tt.check(t, o)
		})
	}
}

// A refused admission leaves the data directory as it was, names its code
// once, and a Card without a build block is reported as such.
func TestHostRefusedAdmissionLeavesNoFiles(t *testing.T) {
	card := sdkfixture.FixtureCard()
	raw, _ := json.Marshal(card)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	delete(m, "build")
	noBuild, _ := json.Marshal(m)
	card.ProtocolVersion = "2.0"
	oldProto, _ := json.Marshal(card)
	serve := func(body []byte) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == protocol.PathCard {
				_, _ = w.Write(body)
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tests := []struct {
		name     string
		body     []byte
		existing bool // the data directory exists with a file of its own
		want     string
	}{
		{"no build block", noBuild, false, "connector refused: invalid_card\n  build: is required\n"},
		{"old protocol, existing directory", oldProto, true, "connector refused: unsupported_protocol_version: protocol version 2.0 is below"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tt.existing {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("keep"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, _, stderr := xconn(t, "", "host", serve(tt.body), "--data", dir)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, tt.want)
			}
			if strings.Count(stderr, "unsupported_protocol_version") > 1 {
				t.Fatalf("code printed twice: %s", stderr)
			}
			entries, err := os.ReadDir(dir)
			switch {
			case !tt.existing && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("data directory left behind: %v %v", entries, err)
			case tt.existing && (len(entries) != 1 || entries[0].Name() != "mine.txt"):
				t.Fatalf("data directory holds %v", entries)
			}
		})
	}
}

// qrConnector is an SDK connector whose QR sign-in stays pending, polled
// every 50 ms.
func qrConnector(t *testing.T) string {
	t.Helper()
	srv, err := connector.New(connector.Options{Card: sdkfixture.FixtureCard(), Skill: []byte(sdkfixture.FixtureSkillMD),
		Store: connectortest.NewStore(t), APIKey: invokeTestKey, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(
		srv.AddAuthFlow(sdkfixture.FlowTokenForm, connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
			return connector.Binding{}, errors.New("not in this test")
		})),
		srv.AddAuthFlow(sdkfixture.FlowQR, connector.QR(connector.QRFlow{
			Issue: func(ctx context.Context, q *connector.QRSession) (string, error) {
				return "https://qr.invalid/login?t=" + q.Token, nil
			},
			PollInterval: 50 * time.Millisecond, TTL: time.Hour,
		})))
	if err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL
}

// A pending QR sign-in prints the QR with its text once, one line per
// state (not one per poll), and stops at once on the first signal.
func TestHostQRSigninStopsOnSignal(t *testing.T) {
	verifyNoLeaks(t)
	url := qrConnector(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"host", "--log", "pretty", url, "--api-key", invokeTestKey, "--data", t.TempDir(), "--auth-flow", sdkfixture.FlowQR},
			strings.NewReader(""), stdout, stderr)
	}()
	waitFor(t, stdout, regexp.MustCompile(`open its text: https://qr\.invalid/login\?t=\S+`), 20*time.Second)
	time.Sleep(600 * time.Millisecond) // about a dozen polls
	text := stdout.String()
	if n := strings.Count(text, "sign-in pending"); n != 1 {
		t.Fatalf("%d pending lines, want 1:\n%s", n, text)
	}
	if strings.Contains(text, "auth.status") {
		t.Fatalf("auth.status polls were printed:\n%s", text)
	}
	start := time.Now()
	cancel() // Ctrl-C
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr %s", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("xconn host ignored the signal during a QR sign-in")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stopped after %v", d)
	}
}
