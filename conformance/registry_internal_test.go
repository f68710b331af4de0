package conformance

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// TestRegistryCoverage: IDs are unique and well-formed, every requirement
// is decided by exactly one probe, and no probe names an unknown ID.
func TestRegistryCoverage(t *testing.T) {
	idRE := regexp.MustCompile(`^[a-z0-9]+(\.[a-z0-9]+(-[a-z0-9]+)*)+$`)
	known := map[Capability]bool{CapNone: true, CapDeclaresIMv2: true, CapDeclaresIMv1: true, CapDeclaresDevice: true,
		CapHasSkill: true, CapHasFormFlow: true, CapHasQRFlow: true, CapHasTools: true, CapHasPathPrefix: true,
		CapAPIKeyRequired: true, CapAuthFlowSelected: true, CapHasAuthenticatedChannel: true, CapUploads: true,
		CapPublishesChat: true, CapPublishesMessagePush: true, CapPublishesFiles: true, CapInboundHook: true, CapToolSelected: true,
		CapPublishesDescriptorPush: true, CapSideEffectToolSelected: true}
	reqs := Requirements()
	seen := map[string]bool{}
	for _, r := range reqs {
		if seen[r.ID] {
			t.Errorf("duplicate ID %s", r.ID)
		}
		seen[r.ID] = true
		if !idRE.MatchString(r.ID) {
			t.Errorf("ID %q is not of the form area.rule-name", r.ID)
		}
		if r.Level != Must && r.Level != Should {
			t.Errorf("%s: level %q", r.ID, r.Level)
		}
		if !known[r.Capability] {
			t.Errorf("%s: unknown capability %q", r.ID, r.Capability)
		}
		if r.Section == "" || r.Statement == "" {
			t.Errorf("%s: missing section or statement", r.ID)
		}
	}
	owner := map[string]int{}
	for i, p := range probes() {
		for _, id := range p.ids {
			if !seen[id] {
				t.Errorf("probe %d names unknown ID %s", i, id)
			}
			if j, dup := owner[id]; dup {
				t.Errorf("%s decided by probes %d and %d", id, j, i)
			}
			owner[id] = i
		}
	}
	for id := range seen {
		if _, ok := owner[id]; !ok {
			t.Errorf("%s has no probe", id)
		}
	}
	if r, ok := Lookup("imv2.ack-duplicate"); !ok || r.Level != Must || r.Capability != CapHasAuthenticatedChannel {
		t.Errorf("Lookup(imv2.ack-duplicate) = %+v, %v", r, ok)
	}
	if _, ok := Lookup("no.such-id"); ok {
		t.Error("Lookup found an unknown ID")
	}
	if len(NonObservable()) == 0 {
		t.Error("no non-observable rules listed")
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		only, skip []string
		want       func(string) bool
	}{
		{nil, nil, func(string) bool { return true }},
		{[]string{"card.*"}, nil, func(id string) bool { return len(id) > 5 && id[:5] == "card." }},
		{nil, []string{"*"}, func(string) bool { return false }},
		{[]string{"ws.hello-ack", "ping.pong"}, []string{"ping.*"}, func(id string) bool { return id == "ws.hello-ack" }},
	}
	for _, tt := range tests {
		got, err := Select(tt.only, tt.skip)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range Requirements() {
			if tt.want(r.ID) {
				n++
			}
		}
		if len(got) != n {
			t.Errorf("Select(%v, %v) = %d requirements, want %d", tt.only, tt.skip, len(got), n)
		}
		for _, r := range got {
			if !tt.want(r.ID) {
				t.Errorf("Select(%v, %v) selected %s", tt.only, tt.skip, r.ID)
			}
		}
	}
}

// TestCardRules checks one broken Card per rule.
func TestCardRules(t *testing.T) {
	good := `{"schema":"xagent.connector/v1","protocol_version":"3.0","build":{"build_time":"1"},"connector_card_id":"im.x",
	"connector":{"name":"X","version":"1"},"supports":{"target_types":["im"],"targets":[{"target_type":"im","provider":"x","label":"X"}],"profiles":["xagent.im.v2"]},
	"tools":[{"tool_id":"x_send","profile":"xagent.im.v2","input_schema":{"type":"object","required":["connector_channel_id"],"properties":{"connector_channel_id":{"type":"string"}}}}],
	"auth_flows":[{"id":"f","target_type":"im","type":"form","title":"F","fields":[{"name":"k","label":"K","input_type":"password"}]}]}`
	tests := []struct {
		id, old, new string
	}{
		{"card.schema", `"xagent.connector/v1"`, `"xagent.connector/v2"`},
		{"card.protocol-version", `"3.0"`, `"2.0"`},
		{"card.id", `"im.x"`, `""`},
		{"card.name", `"name":"X"`, `"name":""`},
		{"card.version", `"version":"1"`, `"version":""`},
		{"card.target-types", `"target_types":["im"]`, `"target_types":["browser"]`},
		{"card.profiles", `"profiles":["xagent.im.v2"]`, `"profiles":[]`},
		{"card.profile-target-types", `"target_types":["im"]`, `"target_types":["device"]`},
		{"card.tool-profile", `"profile":"xagent.im.v2"`, `"profile":"xagent.im.v1"`},
		{"card.tool-id", `"tool_id":"x_send"`, `"tool_id":""`},
		{"card.tool-id-charset", `"tool_id":"x_send"`, `"tool_id":"x send"`},
		{"card.tool-input-object", `"type":"object","required"`, `"type":"array","required"`},
		{"card.tool-channel-arg", `"required":["connector_channel_id"]`, `"required":[]`},
		{"card.tool-no-card-id-arg", `"connector_channel_id":{"type":"string"}}`, `"connector_channel_id":{"type":"string"},"connector_card_id":{"type":"string"}}`},
		{"card.auth-flows", `"title":"F"`, `"title":""`},
		{"card.secret-default", `"input_type":"password"`, `"input_type":"password","default_value":"x"`},
		{"card.no-server-base-url", `"connector_card_id"`, `"server_base_url":"http://x","connector_card_id"`},
		{"card.targets", `"label":"X"`, `"label":""`},
		{"card.auth-flow-target-type", `"id":"f","target_type":"im"`, `"id":"f","target_type":"email"`},
		{"card.user-channel-mode", `"supports":{`, `"supports":{"user_channel_mode":"many",`},
	}
	verdicts := func(data string) map[string][]string {
		c, err := protocol.ParseCard([]byte(data))
		if err != nil {
			t.Fatalf("ParseCard: %v", err)
		}
		var members map[string]json.RawMessage
		_ = json.Unmarshal([]byte(data), &members)
		out := map[string][]string{}
		for _, r := range cardRules(c, members) {
			out[r.id] = r.problems
		}
		return out
	}
	for id, ps := range verdicts(good) {
		if len(ps) > 0 {
			t.Errorf("good Card fails %s: %v", id, ps)
		}
	}
	for _, tt := range tests {
		bad := regexp.MustCompile(regexp.QuoteMeta(tt.old)).ReplaceAllLiteralString(good, tt.new)
		if bad == good {
			t.Fatalf("%s: mutation did not apply", tt.id)
		}
		v := verdicts(bad)
		if len(v[tt.id]) == 0 {
			t.Errorf("%s: not detected", tt.id)
		}
	}
}

// TestCardAuthFlowRulesAgree: the suite's auth-flow requirements
// (card.auth-flows, card.secret-default, card.auth-flow-target-type) reach
// exactly protocol.ValidateCard's verdict on auth_flows, with the same
// "path: reason" lines; a Card whose flow lacks a title fails both.
func TestCardAuthFlowRulesAgree(t *testing.T) {
	good := `{"schema":"xagent.connector/v1","protocol_version":"3.0","build":{"build_time":"1"},"connector_card_id":"im.x",
	"connector":{"name":"X","version":"1"},"supports":{"target_types":["im"],"targets":[{"target_type":"im","provider":"x","label":"X"}],"profiles":["xagent.im.v2"]},
	"auth_flows":[{"id":"q","target_type":"im","type":"qr_login","title":"Q"},
	{"id":"f","target_type":"im","type":"form","title":"F","fields":[{"name":"k","label":"K","input_type":"password"}]}]}`
	tests := []struct {
		name, old, new string
		want           []string // protocol's auth_flows violations; nil when valid
	}{
		{"valid", "", "", nil},
		{"title missing", `,"title":"Q"`, ``, []string{"auth_flows[0].title: is required"}},
		{"title empty", `"title":"F"`, `"title":""`, []string{"auth_flows[1].title: is required"}},
		{"target_type missing", `"target_type":"im","type":"qr_login"`, `"type":"qr_login"`, []string{"auth_flows[0].target_type: is required"}},
		{"target_type undeclared", `"target_type":"im","type":"form"`, `"target_type":"email","type":"form"`,
			[]string{`auth_flows[1].target_type: "email" is not in supports.target_types [im]`}},
		{"target_type unknown", `"target_type":"im","type":"form"`, `"target_type":"chat","type":"form"`,
			[]string{`auth_flows[1].target_type: must be one of [im email calendar ticket device], not "chat"`}},
		{"id missing", `"id":"q",`, ``, []string{"auth_flows[0].id: is required"}},
		{"id repeated", `"id":"f"`, `"id":"q"`, []string{`auth_flows[1].id: duplicate auth flow id "q"`}},
		{"type missing", `"type":"qr_login",`, ``, []string{"auth_flows[0].type: is required"}},
		{"form without fields", `,"fields":[{"name":"k","label":"K","input_type":"password"}]`, ``,
			[]string{"auth_flows[1].fields: a form flow needs at least one field"}},
		{"input_type other", `"input_type":"password"`, `"input_type":"email"`,
			[]string{`auth_flows[1].fields[0].input_type: must be "text" or "password", not "email"`}},
		{"secret default", `"input_type":"password"`, `"input_type":"password","default_value":"x"`,
			[]string{"auth_flows[1].fields[0].default_value: a secret field must not have a default value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(good, tc.old, tc.new, 1)
			if tc.old != "" && data == good {
				t.Fatal("mutation did not apply")
			}
			c, err := protocol.ParseCard([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			var validator []string
			for _, v := range protocol.ValidateCard(c) {
				if strings.HasPrefix(v.Path, "auth_flows") {
					validator = append(validator, v.String())
				}
			}
			var suite []string
			for _, r := range cardRules(c, nil) {
				switch r.id {
				case "card.auth-flows", "card.secret-default", "card.auth-flow-target-type":
					suite = append(suite, r.problems...)
				}
			}
			slices.Sort(validator)
			slices.Sort(suite)
			if !slices.Equal(validator, tc.want) {
				t.Errorf("protocol.ValidateCard: %q, want %q", validator, tc.want)
			}
			if !slices.Equal(suite, validator) {
				t.Errorf("suite %q, validator %q: they disagree", suite, validator)
			}
		})
	}
	for _, id := range []string{"card.auth-flows", "card.auth-flow-target-type"} {
		if r, _ := Lookup(id); r.Level != Must {
			t.Errorf("%s is %s: a Card protocol.ValidateCard refuses must fail the run", id, r.Level)
		}
	}
}

// FuzzCardRules: any Card that decodes is judged without panicking.
func FuzzCardRules(f *testing.F) {
	f.Add([]byte(`{"schema":"xagent.connector/v1","tools":[{"tool_id":"a","input_schema":{"type":"object"}}]}`))
	f.Add([]byte(`{"tools":[{"input_schema":["x"]}],"auth_flows":[{"type":"form","fields":[{"secret":true,"default_value":""}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := protocol.ParseCard(data)
		if err != nil {
			return
		}
		var members map[string]json.RawMessage
		_ = json.Unmarshal(data, &members)
		for _, r := range cardRules(c, members) {
			if r.id == "" {
				t.Fatal("rule without id")
			}
		}
	})
}

// FuzzObserve: any frame from a Connector is observed without panicking,
// and a frame holding a secret is recorded as a leak with the secret
// redacted.
func FuzzObserve(f *testing.F) {
	f.Add([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"chat.message","connector_channel_id":"c","payload":{"message_id":"m","files":[{"type":"x"}]}}`), "secret-1")
	f.Add([]byte(`{"type":"channel.open.ack","payload":{"connection_descriptor":{"schema":1}}}`), "")
	f.Add([]byte(`{"type":"message.push","payload":{"files":[{"download_url":"/x"}]}}`), "abc")
	f.Fuzz(func(t *testing.T, data []byte, secret string) {
		s := &session{}
		if secret != "" {
			s.secrets = []string{secret}
		}
		fr := frame{kind: websocket.MessageText, data: data}
		if env, err := protocol.DecodeEnvelope(data); err == nil {
			fr.env = env
		}
		s.observe(&wsConn{s: s}, fr)
		for _, in := range s.obs.inbound {
			_ = inboundProblems(in)
		}
		for _, p := range s.obs.pushes {
			_ = pushProblems(p, "")
		}
		// A secret that overlaps the "[redacted]" marker can reappear around it.
		if len(secret) >= 3 && !strings.ContainsAny(secret, "[]") && !strings.Contains("redacted", secret) {
			for _, l := range s.obs.leaks {
				if strings.Contains(l.packet, secret) {
					t.Fatalf("leak finding shows the secret: %q", l.packet)
				}
			}
		}
	})
}

// TestCutRunes: excerpts are cut on rune boundaries, never inside a UTF-8
// character.
func TestCutRunes(t *testing.T) {
	s := strings.Repeat("é", 200) // 2 bytes each
	for _, n := range []int{1, 2, 3, 299, 300, 301} {
		got := truncate(s, n)
		if !utf8.ValidString(got) || len(got) > n+len("…") {
			t.Errorf("truncate(%d) = %q: invalid UTF-8 or too long", n, got)
		}
	}
	ses := &session{}
	long := strings.Repeat("日本", maxPacketShown)
	if got := ses.redact(long); !utf8.ValidString(got) {
		t.Error("redact cut inside a rune")
	}
}

// TestScrubSignedQuery: sig= and token= values are redacted wherever they
// appear: in a URL, JSON-escaped, or percent-encoded into a path.
func TestScrubSignedQuery(t *testing.T) {
	ses := &session{}
	for _, in := range []string{
		"/files/refs/f1?sig=abcDEF123456", `"download_url":"/files/refs/f1?x=1\u0026sig=abcDEF123456"`,
		"/files/refs/f1%3Fsig=abcDEF123456", "https://h/qr/1?token=abcDEF123456&x=1",
	} {
		if got := ses.scrub(in); strings.Contains(got, "abcDEF123456") {
			t.Errorf("scrub(%q) = %q", in, got)
		}
	}
}
