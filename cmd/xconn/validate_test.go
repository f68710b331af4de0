package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// xconn runs the CLI in-process and returns its exit code and output.
func xconn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func specCard(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../protocol/testdata/spec_card.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestValidateCard(t *testing.T) {
	good := writeFile(t, "card.json", specCard(t))
	if code, out, errOut := xconn(t, "", "validate", "card", good); code != 0 || out != "" {
		t.Fatalf("valid card: exit %d, out %q, err %q", code, out, errOut)
	}
	bad := strings.Replace(specCard(t), `"tool_id": "wechat_message_send"`, `"tool_id": "wechat message send!"`, 1)
	if bad == specCard(t) {
		t.Fatal("test card did not change")
	}
	code, out, _ := xconn(t, bad, "validate", "card", "-")
	if code != 1 || !strings.Contains(out, "tools[0].tool_id: ") {
		t.Fatalf("invalid card: exit %d, out %q", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, ": ") {
			t.Errorf("line %q is not path: reason", line)
		}
	}
	code, out, _ = xconn(t, bad, "validate", "card", "--json", "-")
	var vs []struct{ Path, Reason string }
	if code != 1 || json.Unmarshal([]byte(out), &vs) != nil || len(vs) == 0 || vs[0].Path == "" {
		t.Fatalf("--json: exit %d, out %q", code, out)
	}
	if code, out, _ = xconn(t, "", "validate", "card", "--json", good); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("--json valid: exit %d, out %q", code, out)
	}
}

func TestValidateUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "card"},
		{"validate", "card", "a", "b"},
		{"validate", "card", filepath.Join(t.TempDir(), "missing.json")},
		{"validate", "descriptor", "x.json"}, // --card missing
		{"validate", "packet", "--from", "nobody", "-"},
		{"validate", "card", "--no-such-flag", "x"},
		{"no-such-command"},
	} {
		if code, _, _ := xconn(t, "{}", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestValidateDescriptor(t *testing.T) {
	card := writeFile(t, "card.json", specCard(t))
	desc, err := os.ReadFile("../../protocol/testdata/spec_descriptor.json")
	if err != nil {
		t.Fatal(err)
	}
	d := writeFile(t, "d.json", string(desc))
	if code, out, errOut := xconn(t, "", "validate", "descriptor", d, "--card", card); code != 0 {
		t.Fatalf("valid descriptor: exit %d, out %q %q", code, out, errOut)
	}
	other := strings.Replace(string(desc), `"connector_card_id": "im.wechat"`, `"connector_card_id": "im.other"`, 1)
	code, out, _ := xconn(t, other, "validate", "descriptor", "-", "--card", card)
	if code != 1 || !strings.Contains(out, "connection.connector_card_id") {
		t.Fatalf("mismatched descriptor: exit %d, out %q", code, out)
	}
}

// TestValidateDescriptorV1: a xagent.connection/v1 Descriptor is reported
// once as one a 3.0 Connector must not emit (section 12); with --from host it
// is accepted after normalisation.
func TestValidateDescriptorV1(t *testing.T) {
	card := writeFile(t, "card.json", specCard(t))
	desc, err := os.ReadFile("../../protocol/testdata/spec_descriptor.json")
	if err != nil {
		t.Fatal(err)
	}
	v1 := regexp.MustCompile(`"profiles":\s*\[\s*"xagent\.im\.v2"\s*\]`).ReplaceAllString(string(desc), `"profile": "xagent.im.v2"`)
	v1 = strings.Replace(v1, `"xagent.connection/v2"`, `"xagent.connection/v1"`, 1)
	if v1 == string(desc) || !strings.Contains(v1, `"profile": "xagent.im.v2"`) {
		t.Fatal("test descriptor did not change")
	}
	code, out, _ := xconn(t, v1, "validate", "descriptor", "-", "--card", card)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "schema: ") || !strings.Contains(lines[0], "must not emit") || !strings.Contains(lines[0], "section 12") {
		t.Fatalf("v1 descriptor from a connector: exit %d, out %q; want one schema line citing section 12", code, out)
	}
	if code, out, errOut := xconn(t, v1, "validate", "descriptor", "-", "--card", card, "--from", "host"); code != 0 || out != "" {
		t.Fatalf("v1 descriptor --from host: exit %d, out %q %q", code, out, errOut)
	}
	if code, _, _ := xconn(t, v1, "validate", "descriptor", "-", "--card", card, "--from", "nobody"); code != 2 {
		t.Fatalf("--from nobody: exit %d, want 2", code)
	}
}

func TestValidatePacket(t *testing.T) {
	ok := `{"schema":"xagent.connector.packet/v1","packet_id":"p1","connector_channel_id":"c1","type":"chat.message.delta","payload":{"message_id":"m","sequence":1,"text":"hi"}}`
	if code, out, _ := xconn(t, ok, "validate", "packet", "-"); code != 0 {
		t.Fatalf("valid delta: exit %d, %q", code, out)
	}
	// A delta never travels Connector -> xAgent.
	if code, _, _ := xconn(t, ok, "validate", "packet", "--from", "connector", "-"); code != 1 {
		t.Fatalf("delta from connector: exit %d, want 1", code)
	}
	zero := strings.Replace(ok, `"sequence":1`, `"sequence":0`, 1)
	if code, out, _ := xconn(t, zero, "validate", "packet", "-"); code != 1 || !strings.Contains(out, "payload.sequence") {
		t.Fatalf("sequence 0: exit %d, %q", code, out)
	}
	if code, out, _ := xconn(t, "{not json", "validate", "packet", "-"); code != 1 || out == "" {
		t.Fatalf("malformed: exit %d, %q", code, out)
	}
}

// TestValidateCardAuthFlows: xconn validate card reports the auth_flows[]
// members the spec's table requires, and a target_type outside
// supports.target_types, one "path: reason" line each.
func TestValidateCardAuthFlows(t *testing.T) {
	qr := `"id": "wechat_qr_login",
      "target_type": "im",
      "type": "qr_login",
      "title": "Sign in to WeChat with a QR Code"`
	tests := []struct {
		name, old, new, want string
	}{
		{"title missing", `,
      "title": "Sign in to WeChat with a QR Code"`, ``, "auth_flows[0].title: is required"},
		{"title empty", `"title": "Sign in to WeChat with a QR Code"`, `"title": ""`, "auth_flows[0].title: is required"},
		{"target_type missing", `"target_type": "im",
      "type": "qr_login"`, `"type": "qr_login"`, "auth_flows[0].target_type: is required"},
		{"target_type undeclared", `"target_type": "im",
      "type": "qr_login"`, `"target_type": "email",
      "type": "qr_login"`, `auth_flows[0].target_type: "email" is not in supports.target_types [im]`},
	}
	if !strings.Contains(specCard(t), qr) {
		t.Fatal("the spec card changed: update the test")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(specCard(t), tc.old, tc.new, 1)
			if bad == specCard(t) {
				t.Fatal("test card did not change")
			}
			code, out, _ := xconn(t, bad, "validate", "card", "-")
			if code != 1 || strings.TrimSpace(out) != tc.want {
				t.Fatalf("exit %d, out %q; want exit 1 and exactly %q", code, out, tc.want)
			}
		})
	}
}
