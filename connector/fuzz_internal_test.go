package connector

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/xconn/xconn/internal/redact"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func FuzzStripChannelArg(f *testing.F) {
	f.Add([]byte(`{"connector_channel_id":"cch_1","text":"hi"}`))
	f.Add([]byte(`{"b":{"y":1,"x":2},"a":[1,2]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, fields, err := stripChannelArg(data)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("output is not an object: %s", out)
		}
		if _, ok := m[protocol.ChannelIDArgument]; ok {
			t.Fatal("channel argument kept")
		}
		if len(m) != len(fields) {
			t.Fatalf("output has %d members, fields %d", len(m), len(fields))
		}
		canon, err := canonicalArgs(fields)
		if err != nil {
			t.Fatalf("canonical form of an object: %v", err)
		}
		// The canonical form is stable: stripping it again gives itself.
		_, f2, err := stripChannelArg(canon)
		if err != nil {
			t.Fatalf("canonical form is not an object: %s", canon)
		}
		again, err := canonicalArgs(f2)
		if err != nil || string(again) != string(canon) {
			t.Fatalf("canonical form unstable: %s vs %s", canon, again)
		}
	})
}

func FuzzCheckFormInput(f *testing.F) {
	f.Add([]byte(`{"token":"abcdefgh","name":"x"}`))
	f.Add([]byte(`{"token":1}`))
	f.Add([]byte(`{"zzz":"secret-value"}`))
	s := &Server{secrets: newTestSecrets(), opts: Options{MaxAuthValueBytes: 64}}
	flow := &protocol.AuthFlow{ID: "f", Type: protocol.AuthFlowForm, Fields: []protocol.AuthField{
		{Name: "token", InputType: protocol.InputPassword, Required: true},
		{Name: "name", InputType: protocol.InputText},
	}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in map[string]json.RawMessage
		if json.Unmarshal(data, &in) != nil {
			return
		}
		values, secrets, vs := s.checkFormInput(flow, in)
		if len(vs) == 0 && values["token"] == "" {
			t.Fatal("missing required token accepted")
		}
		if s.secrets.Len() != 0 {
			t.Fatal("checkFormInput registered a secret before the flow accepted it")
		}
		if len(vs) > 0 && len(secrets) > 0 {
			t.Fatal("secrets returned for refused input")
		}
		for _, v := range secrets {
			if v != values["token"] {
				t.Fatalf("secret %q is not the token field", v)
			}
		}
		for k, v := range values {
			if len(v) > 64 && len(vs) == 0 {
				t.Fatalf("value of %s, %d bytes, accepted over MaxAuthValueBytes", k, len(v))
			}
		}
		for k := range values {
			if k != "token" && k != "name" {
				t.Fatalf("unknown field %q accepted", k)
			}
		}
		for _, v := range vs {
			if tok := values["token"]; len(tok) >= 6 && strings.Contains(v.Reason, tok) {
				t.Fatal("a reason quotes the secret")
			}
		}
	})
}

func FuzzCleanFilename(f *testing.F) {
	for _, s := range []string{"a.txt", "../../etc/passwd", "x\x00y", `c:\temp\a b.png`, "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := cleanFilename(name)
		if got == "" || strings.ContainsAny(got, "/\x00\"") || len(got) > 255 {
			t.Fatalf("cleanFilename(%q) = %q", name, got)
		}
	})
}

func FuzzDecodeBinding(f *testing.F) {
	f.Add([]byte(`{"d":"dG9r","s":["tok"]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := decodeBinding(store.Channel{ChannelID: "c", Binding: data, DisplayName: "n"})
		if err != nil {
			return
		}
		enc, err := encodeBinding(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) == 0 {
			return
		}
		b2, err := decodeBinding(store.Channel{Binding: enc})
		if err != nil || string(b2.Data) != string(b.Data) || len(b2.Secrets) != len(b.Secrets) {
			t.Fatalf("round trip %+v vs %+v", b, b2)
		}
	})
}

func newTestSecrets() *redact.Secrets { return redact.NewSecrets(0) }
