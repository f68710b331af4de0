package xagent

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestOptionalJudges: the judges of packets the script does not cause fail
// on a log that breaks their rule and pass on one that keeps it.
func TestOptionalJudges(t *testing.T) {
	type pkt struct {
		out   bool
		after time.Duration // since the previous packet
		json  string
	}
	hdr := `"schema":"xagent.connector.packet/v1","connector_channel_id":"cch_1",`
	open := []pkt{
		{false, 0, `{` + hdr + `"packet_id":"o1","request_id":"r0","type":"channel.open"}`},
		{true, 0, `{` + hdr + `"packet_id":"o2","reply_to":"o1","type":"channel.open.ack"}`},
	}
	poll := func(id string, refresh bool) pkt {
		return pkt{false, 0, `{` + hdr + `"packet_id":"` + id + `","request_id":"r` + id + `","type":"auth.status","payload":{"auth_session_id":"auth_1","refresh":` + strconv.FormatBool(refresh) + `}}`}
	}
	answer := func(to, status string) pkt {
		return pkt{true, 0, `{` + hdr + `"packet_id":"a` + to + `","reply_to":"` + to + `","type":"auth.status.ack","payload":{"auth_session_id":"auth_1","status":"` + status + `"}}`}
	}
	slow := func(p pkt) pkt { p.after = QRPollInterval; return p }
	tests := []struct {
		name, id string
		log      []pkt
		want     string
	}{
		{"polls paced", "xagent.qr-poll-interval", []pkt{poll("p1", false), answer("p1", "pending"), slow(poll("p2", false))}, "pass"},
		{"polls too fast", "xagent.qr-poll-interval", []pkt{poll("p1", false), answer("p1", "pending"), poll("p2", false)}, "fail"},
		{"refresh asked", "xagent.qr-refresh", []pkt{poll("p1", false), answer("p1", "qr_refresh_required"), slow(poll("p2", true))}, "pass"},
		{"refresh not asked", "xagent.qr-refresh", []pkt{poll("p1", false), answer("p1", "qr_refresh_required"), slow(poll("p2", false))}, "fail"},
		{"cancel of an unknown session", "xagent.cancel", append(append([]pkt(nil), open...),
			pkt{false, 0, `{` + hdr + `"packet_id":"c1","request_id":"rc","type":"auth.cancel","payload":{"auth_session_id":"auth_nobody"}}`}), "fail"},
		{"logout on a channel not open", "xagent.logout", []pkt{{false, 0, `{` + hdr + `"packet_id":"l1","request_id":"rl","type":"auth.logout"}`}}, "fail"},
		{"logout on an open channel", "xagent.logout", append(append([]pkt(nil), open...),
			pkt{false, 0, `{` + hdr + `"packet_id":"l1","request_id":"rl","type":"auth.logout"}`}), "pass"},
		{"tool without request_id", "xagent.tool-routing", append(append([]pkt(nil), open...),
			pkt{false, 0, `{` + hdr + `"packet_id":"t1","type":"tool.invoke","payload":{"tool_id":"` + ToolID + `","arguments":{}}}`}), "fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewServer(Options{SignInWait: 1, Only: []string{tt.id}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			at := time.Now()
			for _, p := range tt.log {
				env, err := protocol.DecodeEnvelope([]byte(p.json))
				if err != nil {
					t.Fatalf("%s: %v", p.json, err)
				}
				at = at.Add(p.after + time.Millisecond)
				s.mu.Lock()
				s.events = append(s.events, event{at: at, kind: "packet", conn: 1, out: p.out, env: env, raw: []byte(p.json)})
				s.mu.Unlock()
			}
			res, _ := s.Report().Result(tt.id)
			if string(res.Status) != tt.want {
				t.Errorf("%s = %s (%s%s), want %s", tt.id, res.Status, res.Actual, res.Reason, tt.want)
			}
		})
	}
}
