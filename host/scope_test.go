package host

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xconn/xconn/protocol"
)

// schemaOf decodes a projected schema's properties and required.
func schemaOf(t *testing.T, raw json.RawMessage) (props map[string]json.RawMessage, required []string) {
	t.Helper()
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	return s.Properties, s.Required
}

func TestScopeFunctions(t *testing.T) {
	t.Parallel()
	withChannel := func(props string) json.RawMessage {
		s, err := protocol.WithConnectorChannelIDInputSchema(json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["text"]}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	onlyChannel, err := protocol.WithConnectorChannelIDInputSchema(nil)
	if err != nil {
		t.Fatal(err)
	}
	send := withChannel(`"text":{"type":"string","description":"What to say."}`)
	tests := []struct {
		name         string
		def          FunctionDef
		scoped       bool
		wantProps    []string // sorted
		wantRequired []string
	}{
		{"send tool: property and required entry removed",
			FunctionDef{Name: "webchat_message_send", CardID: "im.webchat", Parameters: send},
			true, []string{"text"}, []string{"text"}},
		{"only the channel argument: required dropped",
			FunctionDef{Name: "x_status", CardID: "im.x", Parameters: onlyChannel},
			true, nil, nil},
		{"connector_message_send keeps its explicit target",
			FunctionDef{Name: ToolMessageSend, Builtin: true, Parameters: json.RawMessage(messageSendSchema)},
			false, []string{"connector_card_id", "connector_channel_id", "text"}, []string{"connector_channel_id", "text"}},
		{"a schema without the argument is kept",
			FunctionDef{Name: "y_tool", CardID: "im.y", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
			false, []string{"q"}, []string{"q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := string(tt.def.Parameters)
			out := ScopeFunctions([]FunctionDef{tt.def})
			if len(out) != 1 {
				t.Fatalf("got %d defs", len(out))
			}
			if string(tt.def.Parameters) != before {
				t.Fatal("the input def was modified")
			}
			d := out[0]
			if d.ChannelScoped != tt.scoped {
				t.Errorf("ChannelScoped = %v, want %v", d.ChannelScoped, tt.scoped)
			}
			if !tt.scoped && string(d.Parameters) != before {
				t.Errorf("parameters changed: %s", d.Parameters)
			}
			props, req := schemaOf(t, d.Parameters)
			var names []string
			for n := range props {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.wantProps) || !slices.Equal(req, tt.wantRequired) {
				t.Errorf("properties %v required %v, want %v %v", names, req, tt.wantProps, tt.wantRequired)
			}
			if tt.scoped {
				if again := ScopeFunctions(out); string(again[0].Parameters) != string(d.Parameters) {
					t.Errorf("scoping twice changed the schema: %s", again[0].Parameters)
				}
			}
		})
	}
	// Descriptions and other members survive.
	d := ScopeFunctions([]FunctionDef{{Name: "s", CardID: "c", Parameters: send}})[0]
	props, _ := schemaOf(t, d.Parameters)
	if string(props["text"]) != `{"type":"string","description":"What to say."}` {
		t.Errorf("text property = %s", props["text"])
	}
	// A schema that does not decode is left alone.
	bad := FunctionDef{Name: "z", CardID: "c", Parameters: json.RawMessage(`{"properties":[1]}`)}
	if d := ScopeFunctions([]FunctionDef{bad})[0]; d.ChannelScoped || string(d.Parameters) != string(bad.Parameters) {
		t.Errorf("bad schema scoped: %+v", d)
	}
}

// TestScopeFunctionsOfHost scopes what the host projects: every connector
// tool loses the argument, the built-in tools keep theirs.
func TestScopeFunctionsOfHost(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "una", "im.fake")
	defs, err := th.Tools(ctxT(t), "una", uc.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range ScopeFunctions(defs) {
		props, req := schemaOf(t, d.Parameters)
		_, hasProp := props[protocol.ChannelIDArgument]
		inReq := slices.Contains(req, protocol.ChannelIDArgument)
		switch {
		case d.Name == ToolMessageSend:
			if !hasProp || !inReq || d.ChannelScoped {
				t.Errorf("connector_message_send lost its target: %s", d.Parameters)
			}
		case d.Builtin:
		default:
			n++
			if hasProp || inReq || !d.ChannelScoped {
				t.Errorf("%s still shows the channel argument: %s", d.Name, d.Parameters)
			}
		}
	}
	if n == 0 {
		t.Fatal("no connector tool projected")
	}
}

// TestInvokeInConversation is the table of the scoping rules of a model's
// call in a conversation: the channel argument filled, an explicit own
// channel honoured, any other refused before a packet goes out, the
// built-in connector_message_send untouched.
func TestInvokeInConversation(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	first := th.signinRoom(t, "val", "im.fake")
	second := th.signinRoom(t, "val", "im.fake") // the conversation
	stranger := th.signinRoom(t, "wes", "im.fake")
	if second.SessionID == "" {
		t.Fatal("a signed-in channel has no dedicated session")
	}
	q := func(s string) string { return `"` + s + `"` }
	tests := []struct {
		name    string
		session string // "" for none
		opts    []InvokeOption
		tool    string
		args    string
		code    protocol.Code // the error, "" for success
		routed  string        // the envelope's channel
		argChan string        // connector_channel_id the connector gets, "" for none
	}{
		{"left out: filled from the bound conversation", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"empty string: filled", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":"","text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"null: filled", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":null,"text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"no arguments at all: filled", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_slow", ``, "", second.ChannelID, second.ChannelID},
		{"explicit own channel: honoured", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":` + q(second.ChannelID) + `,"text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"the user's other channel: the binding holds", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":` + q(first.ChannelID) + `,"text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"another user's channel: refused", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":` + q(stranger.ChannelID) + `,"text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"an unknown channel: refused", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":"cch_nope","text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"not a string: refused", second.SessionID, []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"connector_channel_id":42,"text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"no binding: the conversation's channel, not the first", "", []InvokeOption{InConversation(second.ID)},
			"im_fake_send", `{"text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"no binding, no conversation: the first usable channel", "", []InvokeOption{InConversation("")},
			"im_fake_send", `{"text":"hi"}`, "", first.ChannelID, first.ChannelID},
		{"no binding: an explicit own channel routes", "", []InvokeOption{InConversation("")},
			"im_fake_send", `{"connector_channel_id":` + q(second.ChannelID) + `,"text":"hi"}`, "", second.ChannelID, second.ChannelID},
		{"no binding: another user's channel refused", "", []InvokeOption{InConversation(first.ID)},
			"im_fake_send", `{"connector_channel_id":` + q(stranger.ChannelID) + `,"text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"a conversation of another user is not used", "", []InvokeOption{InConversation(stranger.ID)},
			"im_fake_send", `{"text":"hi"}`, "", first.ChannelID, first.ChannelID},
		{"the embedder's channel holds against the model's", "", []InvokeOption{InConversation(""), WithUserChannel(first.ID)},
			"im_fake_send", `{"connector_channel_id":` + q(second.ChannelID) + `,"text":"hi"}`, protocol.CodeInvalidArguments, "", ""},
		{"without InConversation nothing is filled", second.SessionID, nil,
			"im_fake_send", `{"text":"hi"}`, "", second.ChannelID, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.count(protocol.TypeToolInvoke)
			res, err := th.Invoke(ctx, "val", tt.session, tt.tool, json.RawMessage(tt.args), "call-scope-"+string(rune('a'+i)), tt.opts...)
			if tt.code != "" {
				if code(err) != tt.code {
					t.Fatalf("err %v, want %s", err, tt.code)
				}
				if n := f.count(protocol.TypeToolInvoke); n != before {
					t.Fatalf("a refused call reached the connector (%d tool.invoke)", n-before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out routed
			if err := json.Unmarshal(res.Output, &out); err != nil {
				t.Fatal(err)
			}
			if res.ChannelID != tt.routed || out.RoutedTo != tt.routed {
				t.Fatalf("routed to %s (envelope %s), want %s", res.ChannelID, out.RoutedTo, tt.routed)
			}
			var got struct {
				Channel *string `json:"connector_channel_id"`
				Text    string  `json:"text"`
			}
			if err := json.Unmarshal(out.Arguments, &got); err != nil {
				t.Fatalf("arguments %s: %v", out.Arguments, err)
			}
			switch {
			case tt.argChan == "" && got.Channel != nil:
				t.Errorf("argument filled without InConversation: %s", out.Arguments)
			case tt.argChan != "" && (got.Channel == nil || *got.Channel != tt.argChan):
				t.Errorf("arguments %s, want connector_channel_id %s", out.Arguments, tt.argChan)
			}
			if tt.tool == "im_fake_send" && got.Text != "hi" {
				t.Errorf("text lost: %s", out.Arguments)
			}
		})
	}

	// A huge value is refused with a bounded message.
	huge := strings.Repeat("cch_x", 20000)
	_, err := th.Invoke(ctx, "val", second.SessionID, "im_fake_send", json.RawMessage(`{"connector_channel_id":"`+huge+`","text":"hi"}`),
		"call-huge", InConversation(second.ID))
	if code(err) != protocol.CodeInvalidArguments || len(err.Error()) > 512 {
		t.Fatalf("huge channel argument: %d bytes of error, code %s", len(err.Error()), code(err))
	}

	// connector_message_send keeps its explicit target, even in a
	// conversation bound to another channel, and is never filled.
	res, err := th.Invoke(ctx, "val", second.SessionID, ToolMessageSend,
		json.RawMessage(`{"connector_channel_id":`+q(first.ChannelID)+`,"text":"to the first"}`), "call-builtin", InConversation(second.ID))
	if err != nil || res.ChannelID != first.ChannelID {
		t.Fatalf("connector_message_send: %+v %v, want channel %s", res, err, first.ChannelID)
	}
	if _, err := th.Invoke(ctx, "val", second.SessionID, ToolMessageSend,
		json.RawMessage(`{"text":"no target"}`), "call-builtin-2", InConversation(second.ID)); code(err) != protocol.CodeInvalidArguments {
		t.Fatalf("connector_message_send without a target: %v, want invalid_arguments", err)
	}
}

// FuzzScopeArguments: schemas and arguments of any shape never panic; a
// scoped schema never shows the channel argument, and a filled argument
// reads back.
func FuzzScopeArguments(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"connector_channel_id":{"type":"string"},"text":{}},"required":["connector_channel_id","text"]}`), []byte(`{"text":"hi"}`), "cch_1")
	f.Add([]byte(`{"properties":{"connector_channel_id":1},"required":"x"}`), []byte(`null`), "")
	f.Add([]byte(`[]`), []byte(`{"connector_channel_id":7}`), "cch_\u00e9")
	f.Fuzz(func(t *testing.T, schema, args []byte, id string) {
		if out, ok := withoutChannelArg(schema); ok {
			var s struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []json.RawMessage          `json:"required"`
			}
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatalf("scoped schema %s does not decode: %v", out, err)
			}
			if _, has := s.Properties[protocol.ChannelIDArgument]; has {
				t.Fatalf("scoped schema %s still has the property", out)
			}
			for _, r := range s.Required {
				if string(r) == `"`+protocol.ChannelIDArgument+`"` {
					t.Fatalf("scoped schema %s still requires it", out)
				}
			}
		}
		_, isObject, err := channelArg(args)
		if err != nil && code(err) != protocol.CodeInvalidArguments {
			t.Fatalf("channelArg error %v", err)
		}
		if !isObject {
			return
		}
		filled, err := withChannelArg(args, id)
		if err != nil {
			t.Fatalf("withChannelArg(%s): %v", args, err)
		}
		got, _, err := channelArg(filled)
		if err != nil || (utf8.ValidString(id) && got != id) {
			t.Fatalf("filled %s reads back %q, %v; want %q", filled, got, err, id)
		}
	})
}
