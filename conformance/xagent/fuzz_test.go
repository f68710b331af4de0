package xagent

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// FuzzJudge feeds arbitrary frames, as packets from the xAgent and as the
// Server's own, into the log with script facts pointing at them, and
// judges: no input may make the judges panic.
func FuzzJudge(f *testing.F) {
	f.Add([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p1","type":"connector.hello","payload":{"connector_card_id":"im.xagent-check"}}`), true)
	f.Add([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p2","type":"chat.message.ack","reply_to":"x","payload":{"message_id":"m","status":"rejected"}}`), false)
	f.Add([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p3","type":"chat.message.delta","connector_channel_id":"c","payload":{"message_id":"m","sequence":-1,"files":[]}}`), false)
	f.Add([]byte(`{"type":"chat.message","payload":{"message_id":"m","files":[{"file_ref":"x","download_url":"/a"}]}}`), true)
	f.Add([]byte(`not json`), false)
	f.Fuzz(func(t *testing.T, data []byte, out bool) {
		s, err := NewServer(Options{APIKey: "fuzz-key", Timeout: 1, SignInWait: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for conn := 1; conn <= 3; conn++ {
			s.record(event{kind: "handshake", conn: conn, method: "GET", path: protocol.PathWS})
			if env, err := protocol.DecodeEnvelope(data); err == nil {
				s.record(event{kind: "packet", conn: conn, out: out, env: env, raw: data})
				s.record(event{kind: "packet", conn: conn, out: !out, env: env, raw: data})
			} else {
				s.record(event{kind: "frame", conn: conn, raw: data})
			}
		}
		s.mu.Lock()
		s.facts = facts{channel: "c", conns: []int{1, 2, 3}, dup: "p1", conflict: "p2", f1: "m", f2: "m", f3: "m", phase: 4,
			m1: protocol.ChatMessagePayload{MessageID: "m"}, m3: protocol.ChatMessagePayload{MessageID: "m"}}
		s.mu.Unlock()
		rep := s.Report()
		if len(rep.Results) != len(Requirements()) {
			t.Fatalf("%d results", len(rep.Results))
		}
	})
}

// TestEveryRequirementJudged: each requirement has exactly one judge and
// each judge a requirement; IDs are unique and cite a section.
func TestEveryRequirementJudged(t *testing.T) {
	checks := (&judge{}).checks()
	seen := map[string]bool{}
	for _, r := range Requirements() {
		if seen[r.ID] {
			t.Errorf("duplicate ID %s", r.ID)
		}
		seen[r.ID] = true
		if checks[r.ID] == nil {
			t.Errorf("%s has no judge", r.ID)
		}
		if r.Section == "" || r.Statement == "" || (r.Level != "MUST" && r.Level != "SHOULD") {
			t.Errorf("%s: section %q level %q", r.ID, r.Section, r.Level)
		}
	}
	for id := range checks {
		if !seen[id] {
			t.Errorf("judge for unknown requirement %s", id)
		}
	}
	if _, err := Select([]string{"["}, nil); err == nil {
		t.Error("a malformed pattern was accepted")
	}
	if got, _ := Select([]string{"xagent.qr-*"}, []string{"xagent.qr-refresh"}); len(got) != 1 || got[0].ID != "xagent.qr-poll-interval" {
		t.Errorf("Select = %v", got)
	}
}

// TestREADMETables keeps the xAgent-side tables of ../README.md equal to
// the output of xconn check --xagent --list --markdown (headings one level
// deeper).
func TestREADMETables(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "--list --markdown; TestREADMETables keeps them in step -->\n", "<!-- end of xagent tables -->"
	_, rest, ok := strings.Cut(string(data), start)
	got, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatal("README.md lacks the xagent table markers")
	}
	var want bytes.Buffer
	if err := WriteMarkdown(&want, Requirements()); err != nil {
		t.Fatal(err)
	}
	if got != strings.ReplaceAll(want.String(), "### ", "#### ") {
		t.Error("the xagent tables of conformance/README.md are stale: regenerate them with xconn check --xagent --list --markdown")
	}
}

// TestSecretsRedacted: a failure quoting a sign-in packet shows neither
// the API key nor the secret form input, in any report format.
func TestSecretsRedacted(t *testing.T) {
	const key, secret = "redact-key-0123456789", "secret-code-4711"
	s, err := NewServer(Options{APIKey: key, SignInWait: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw := []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p1","request_id":"r1","connector_channel_id":"cch_x","type":"auth.start",` +
		`"payload":{"flow_id":"` + FormFlow + `","input":{"code":"` + secret + `"}},"note":"` + key + `"}`)
	env, err := protocol.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	s.record(event{kind: "packet", conn: 1, env: env, raw: raw}) // on a channel never opened: xagent.form-input fails
	rep := s.Report()
	res, _ := rep.Result("xagent.form-input")
	if res.Status != "fail" || !strings.Contains(res.Packet, "[redacted]") {
		t.Fatalf("xagent.form-input = %+v, want a failure quoting the redacted packet", res)
	}
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	_ = rep.WriteJSON(&b)
	_ = rep.WriteJUnit(&b)
	for _, v := range []string{key, secret} {
		if strings.Contains(b.String(), v) {
			t.Errorf("a report contains %q", v)
		}
	}
}
