package protocol

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"
)

func TestValidateSchema(t *testing.T) {
	card, _ := os.ReadFile("testdata/spec_card.json")
	desc, _ := os.ReadFile("testdata/spec_descriptor.json")
	tests := []struct {
		name string
		kind SchemaKind
		data string
		want []string // expected paths, sorted; nil means valid
	}{
		{"card spec", SchemaCard, string(card), nil},
		{"descriptor spec", SchemaDescriptor, string(desc), nil},
		{"packet minimal", SchemaPacket, `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping"}`, nil},
		{"packet missing members", SchemaPacket, `{"schema":"xagent.connector.packet/v1"}`, []string{"packet_id", "type"}},
		{"packet const", SchemaPacket, `{"schema":"x","packet_id":"p","type":"t"}`, []string{"schema"}},
		{"packet error code", SchemaPacket, `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"t","error":{"code":""}}`, []string{"error.code"}},
		{"packet negative time", SchemaPacket, `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"t","time":-1}`, []string{"time"}},
		{"card tool path", SchemaCard, `{"schema":"xagent.connector/v1","protocol_version":"3.0","build":{"build_time":""},
			"connector_card_id":"a","connector":{"name":"n","version":"v"},"supports":{"target_types":["im"],"profiles":["p"]},
			"tools":[{"tool_id":"a","input_schema":{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["connector_channel_id"]}},
			{"tool_id":"b","input_schema":{"type":"object","properties":{"connector_channel_id":{"type":"string"}},"required":["x"]}}]}`,
			[]string{"tools[1].input_schema.required"}},
		{"descriptor digit key", SchemaDescriptor, `{"schema":"xagent.connection/v2","connection":{"connector_card_id":"a","connector_id":"b",
			"connector_channel_id":"c","target_type":"im","profiles":["p"],"status":"connected"},"target":{"provider":"p","display_name":"d"},
			"tools":[{"tool_id":"t","status":"on"}]}`, []string{"tools[0].status"}},
		{"not JSON", SchemaCard, `{`, []string{""}},
		{"unknown kind", SchemaKind(9), `{}`, []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := ValidateSchema(tc.kind, []byte(tc.data))
			var got []string
			for _, v := range vs {
				got = append(got, v.Path)
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("paths %q, want %q (%v)", got, tc.want, vs)
			}
		})
	}
}

func TestInstancePath(t *testing.T) {
	inst := map[string]any{"a": []any{map[string]any{"7": map[string]any{"b": 1}}}}
	if got := instancePath(inst, []string{"a", "0", "7", "b"}); got != "a[0].7.b" {
		t.Fatalf("got %q", got)
	}
	if got := instancePath(inst, nil); got != "" {
		t.Fatalf("root: %q", got)
	}
}

// vMutate applies one random structural mutation to a decoded JSON document
// and returns the result. The values come from a pool that mixes valid
// protocol values with wrong ones, so that many mutants stay valid.
func vMutate(r *rand.Rand, v any) any {
	pool := []any{nil, "", "x", "im", "email", "device", "3.0", "2.0", ProfileIMv2, ProfileIMv1, ProfileDeviceV1,
		"connected", "available", "object", "string", ChannelIDArgument, "form", "qr_login", "password", "text",
		1.0, -1.0, 0.5, true, false, []any{}, map[string]any{}, []any{"im"}, map[string]any{"type": "string"},
		"server_base_url", "https://h/x", "/files/refs/f", "accepted", "rejected", "tool", "thinking",
		"session_id", "a b", "pending", "authenticated"}
	pick := func() any { return pool[r.IntN(len(pool))] }
	var nodes []*any
	var collect func(p *any)
	collect = func(p *any) {
		nodes = append(nodes, p)
		switch x := (*p).(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c := x[k]
				cp := &c
				collect(cp)
				x[k] = *cp
			}
		case []any:
			for i := range x {
				collect(&x[i])
			}
		}
	}
	// Collect pointers in a first pass; the mutation is applied through a
	// second walk that replaces the chosen node.
	root := v
	collect(&root)
	target := r.IntN(len(nodes))
	i := 0
	var apply func(x any) any
	apply = func(x any) any {
		me := i
		i++
		if me == target {
			switch y := x.(type) {
			case map[string]any:
				keys := make([]string, 0, len(y))
				for k := range y {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				switch op := r.IntN(3); {
				case op == 0 && len(keys) > 0:
					delete(y, keys[r.IntN(len(keys))])
				case op == 1:
					names := []string{"x_ext", "server_base_url", "role", "files", "profile", "tool_name", "retryable", "code", "download_url"}
					y[names[r.IntN(len(names))]] = pick()
				default:
					return pick()
				}
				return y
			case []any:
				switch op := r.IntN(3); {
				case op == 0 && len(y) > 0:
					return append(y, y[r.IntN(len(y))])
				case op == 1 && len(y) > 0:
					return y[1:]
				default:
					return pick()
				}
			default:
				return pick()
			}
		}
		switch y := x.(type) {
		case map[string]any:
			keys := make([]string, 0, len(y))
			for k := range y {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				y[k] = apply(y[k])
			}
		case []any:
			for j := range y {
				y[j] = apply(y[j])
			}
		}
		return x
	}
	return apply(root)
}

// vMutants yields n mutants of the JSON document seed (1 to 3 mutations each).
func vMutants(t testing.TB, seed []byte, n int, rs uint64) [][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(rs, 0x9e3779b97f4a7c15))
	out := make([][]byte, 0, n)
	for range n {
		var v any
		if err := json.Unmarshal(seed, &v); err != nil {
			t.Fatal(err)
		}
		for range 1 + r.IntN(3) {
			v = vMutate(r, v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestAcceptedImpliesSchema is the property of issue 2: anything the
// validators accept also passes the official JSON Schemas. It runs over
// thousands of mutants of valid documents and checks that both outcomes
// occur, so that the property is not satisfied vacuously.
func TestAcceptedImpliesSchema(t *testing.T) {
	card, _ := os.ReadFile("testdata/spec_card.json")
	desc, _ := os.ReadFile("testdata/spec_descriptor.json")
	specCard := vSpecCard(t)
	packets := vPacketSeeds()
	const n = 500
	var accepted, rejected int
	check := func(kind SchemaKind, data []byte, vs Violations) {
		if len(vs) > 0 {
			rejected++
			return
		}
		accepted++
		if svs := ValidateSchema(kind, data); len(svs) > 0 {
			t.Errorf("accepted but the %v schema rejects %s: %v", kind, data, svs)
		}
	}
	for _, m := range vMutants(t, card, n, 1) {
		_, vs := ValidateCardJSON(m)
		check(SchemaCard, m, vs)
	}
	for _, m := range vMutants(t, desc, n, 2) {
		_, vs := ValidateDescriptorJSON(m, specCard)
		var peek struct{ Schema string }
		if json.Unmarshal(m, &peek) == nil && peek.Schema == DescriptorSchemaV1 {
			continue // normalised before the v2 schema applies
		}
		check(SchemaDescriptor, m, vs)
	}
	for i, p := range packets {
		for _, m := range vMutants(t, []byte(p), n/len(packets)+1, uint64(100+i)) {
			for _, d := range []Direction{ToHost, ToConnector} {
				_, vs := ValidatePacketJSON(m, d)
				check(SchemaPacket, m, vs)
			}
		}
	}
	t.Logf("accepted %d, rejected %d", accepted, rejected)
	if accepted < 100 || rejected < 100 {
		t.Fatalf("the generator is too one-sided: accepted %d, rejected %d", accepted, rejected)
	}
}

// vPacketSeeds are valid packets of several types, used as mutation and fuzz seeds.
func vPacketSeeds() []string {
	return []string{
		`{"schema":"xagent.connector.packet/v1","packet_id":"p1","request_id":"r1","type":"connector.hello","time":1,"payload":{"connector_card_id":"im.wechat","protocol_version":"3.0","supported_profiles":["xagent.im.v2"]}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p2","request_id":"r1","reply_to":"p1","type":"connector.hello.ack","payload":{"connector_card_id":"im.wechat","connector_id":"c","protocol_version":"3.0"}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p3","request_id":"r2","connector_channel_id":"c1","type":"tool.invoke","payload":{"tool_id":"t","arguments":{"connector_channel_id":"c1","text":"hi"}}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p4","connector_channel_id":"c1","type":"chat.message","payload":{"message_id":"m","text":"hi","files":[{"type":"file","file_ref":"f","download_url":"/files/refs/f"}]}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p5","reply_to":"p4","connector_channel_id":"c1","type":"chat.message.ack","payload":{"message_id":"m","status":"rejected","code":"x","retryable":true}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p6","connector_channel_id":"c1","type":"chat.activity","payload":{"status":"tool","tool_name":"search"}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p7","connector_channel_id":"c1","type":"chat.message.delta","payload":{"message_id":"m","sequence":1,"text":"h"}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p8","request_id":"r","type":"error","error":{"code":"invalid_packet","message":"m"}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p9","request_id":"r","connector_channel_id":"c1","type":"auth.status.ack","payload":{"status":"pending","auth_session_id":"a"}}`,
	}
}
