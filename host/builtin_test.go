package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

type listedChannels struct {
	Channels []struct {
		ChannelID     string `json:"connector_channel_id"`
		CardID        string `json:"connector_card_id"`
		ConnectorName string `json:"connector_name"`
		Provider      string `json:"provider"`
		DisplayName   string `json:"display_name"`
		Status        string `json:"status"`
		Authenticated bool   `json:"authenticated"`
		CanSend       bool   `json:"can_send_messages"`
		Current       bool   `json:"current"`
	} `json:"channels"`
}

// Section 10.1: connector_channels_list, then connector_message_send to an
// explicitly chosen channel, validated against the user's own channels.
func TestBuiltinChannelTools(t *testing.T) {
	t.Parallel()
	one := newFakeConnector(t, "im.one", "")
	two := newFakeConnector(t, "im.two", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, one)
	th.admitOnline(t, two)
	ctx := ctxT(t)
	a1 := th.signinRoom(t, "ren", "im.one")
	a2 := th.signinRoom(t, "ren", "im.one")
	b1 := th.signinRoom(t, "ren", "im.two")
	other := th.signinRoom(t, "sam", "im.one")
	if a1.ChannelID != b1.ChannelID {
		t.Fatalf("the fakes should reuse channel ids across connectors (%s, %s)", a1.ChannelID, b1.ChannelID)
	}

	defs, err := th.Tools(ctx, "ren", a2.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	builtins := map[string]FunctionDef{}
	for _, d := range defs {
		if d.Builtin {
			builtins[d.Name] = d
		}
	}
	if len(builtins) != 2 || builtins[ToolChannelsList].CardID != "" || !json.Valid(builtins[ToolMessageSend].Parameters) {
		t.Fatalf("built-in tools %+v", builtins)
	}
	oa, _ := ExportOpenAI(defs)
	exported := 0
	for _, o := range oa {
		if o.Function.Name == ToolChannelsList || o.Function.Name == ToolMessageSend {
			exported++
		}
	}
	if exported != 2 {
		t.Fatalf("built-in tools exported: %d", exported)
	}

	res, err := th.Invoke(ctx, "ren", a2.SessionID, ToolChannelsList, json.RawMessage(`{}`), "l1")
	if err != nil {
		t.Fatal(err)
	}
	var list listedChannels
	if err := json.Unmarshal(res.ModelOutput, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Channels) != 3 {
		t.Fatalf("listed %s", res.Output)
	}
	for i, want := range []struct {
		id, card string
		current  bool
	}{{a1.ChannelID, "im.one", false}, {a2.ChannelID, "im.one", true}, {b1.ChannelID, "im.two", false}} {
		c := list.Channels[i]
		if c.ChannelID != want.id || c.CardID != want.card || c.Current != want.current || c.Status != "connected" ||
			!c.Authenticated || !c.CanSend || c.DisplayName != "Fake room" || c.Provider == "" || c.ConnectorName != "Fake "+want.card {
			t.Fatalf("channel %d = %+v, want %+v", i, c, want)
		}
	}
	res, _ = th.Invoke(ctx, "ren", "", ToolChannelsList, json.RawMessage(`{"connector_card_id":"im.two"}`), "l2")
	if err := json.Unmarshal(res.Output, &list); err != nil || len(list.Channels) != 1 || list.Channels[0].CardID != "im.two" {
		t.Fatalf("filtered list %s", res.Output)
	}

	// Send to the second channel of im.one, from a session bound elsewhere.
	res, err = th.Invoke(ctx, "ren", a1.SessionID, ToolMessageSend,
		json.RawMessage(`{"connector_channel_id":"`+a2.ChannelID+`","text":"to the second room"}`), "s1")
	if err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Status    string `json:"status"`
		MessageID string `json:"message_id"`
	}
	_ = json.Unmarshal(res.Output, &sent)
	if sent.Status != "queued" || sent.MessageID == "" || res.UserChannelID != a2.ID || res.CardID != "im.one" {
		t.Fatalf("send result %+v: %s", res, res.Output)
	}
	final := waitFinal(t, one)
	if final.Text != "to the second room" || final.MessageID != sent.MessageID {
		t.Fatalf("final %+v", final)
	}
	if envs := one.packets(protocol.TypeChatMessage); len(envs) != 1 || envs[0].ConnectorChannelID != a2.ChannelID {
		t.Fatalf("final sent on %v", envs)
	}
	eventually(t, "delivered", func() bool {
		o, ok, _ := th.FinalOutcome(ctx, a2.ID, sent.MessageID)
		return ok && o.Kind == "delivered"
	})

	if err := th.Logout(ctx, a1.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, user, args string
		code             protocol.Code
	}{
		{"no channel id", "ren", `{"text":"x"}`, protocol.CodeInvalidArguments},
		{"no text", "ren", `{"connector_channel_id":"` + a2.ChannelID + `"}`, protocol.CodeInvalidArguments},
		{"empty text", "ren", `{"connector_channel_id":"` + a2.ChannelID + `","text":""}`, protocol.CodeInvalidArguments},
		{"unknown member", "ren", `{"connector_channel_id":"` + a2.ChannelID + `","text":"x","to":"y"}`, protocol.CodeInvalidArguments},
		{"not an object", "ren", `"hello"`, protocol.CodeInvalidArguments},
		{"unknown channel", "ren", `{"connector_channel_id":"cch_999","text":"x"}`, protocol.CodeConnectionNotFound},
		{"another user's channel", "ren", `{"connector_channel_id":"` + other.ChannelID + `","text":"x","connector_card_id":"im.two"}`, protocol.CodeConnectionNotFound},
		{"channel of another user only", "sam", `{"connector_channel_id":"` + a2.ChannelID + `","text":"x"}`, protocol.CodeConnectionNotFound},
		{"signed out", "ren", `{"connector_channel_id":"` + a1.ChannelID + `","connector_card_id":"im.one","text":"x"}`, protocol.CodeConnectionNotAuthenticated},
		{"id of two connectors", "ren", `{"connector_channel_id":"` + a1.ChannelID + `","text":"x"}`, protocol.CodeInvalidArguments},
		{"id of two connectors, card given", "ren", `{"connector_channel_id":"` + b1.ChannelID + `","connector_card_id":"im.two","text":"x"}`, ""},
	}
	for _, tt := range tests {
		_, err := th.Invoke(ctx, tt.user, "", ToolMessageSend, json.RawMessage(tt.args), "e-"+tt.name)
		if code(err) != tt.code && !(tt.code == "" && err == nil) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.code)
		}
	}
	if f := waitFinal(t, two); f.Text != "x" {
		t.Fatalf("final at im.two: %+v", f)
	}
}

func TestBuiltinChannelToolsGovernedAndOptional(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	var deny atomic.Bool
	th := newTestHost(t, "", func(o *Options) {
		o.Governance = func(_ context.Context, _, _, cardID string, tool *protocol.Tool) bool {
			return !(deny.Load() && cardID == "" && tool.ToolID == ToolMessageSend)
		}
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "tao", "im.fake")
	ctx := ctxT(t)
	deny.Store(true)
	defs, _ := th.Tools(ctx, "tao", "")
	for _, d := range defs {
		if d.Name == ToolMessageSend {
			t.Fatal("governance did not filter connector_message_send")
		}
	}
	if _, err := th.Invoke(ctx, "tao", "", ToolMessageSend, json.RawMessage(`{"connector_channel_id":"`+uc.ChannelID+`","text":"x"}`), "g"); code(err) != CodeToolDenied {
		t.Fatalf("denied send: %v", err)
	}

	off := newTestHost(t, "", func(o *Options) { o.NoBuiltinTools = true })
	off.admitOnline(t, f)
	off.signinRoom(t, "tao", "im.fake")
	defs, _ = off.Tools(ctx, "tao", "")
	if len(cardDefs(defs)) != len(defs) {
		t.Fatalf("built-in tools offered with NoBuiltinTools: %v", defs)
	}
	if _, err := off.Invoke(ctx, "tao", "", ToolChannelsList, nil, "x"); code(err) != protocol.CodeUnknownTool {
		t.Fatalf("built-in call with NoBuiltinTools: %v", err)
	}
}

// A channel without IM v2 chat.message (an IM v1 connector) is listed but
// cannot take connector_message_send; with no other channel the tool is not
// offered at all.
func TestBuiltinMessageSendNeedsIMv2(t *testing.T) {
	t.Parallel()
	fx := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: sdkKey, Profiles: []protocol.Profile{protocol.ProfileIMv1}})
	th := newTestHost(t, "", nil)
	if _, err := th.Admit(ctxT(t), fx.URL, sdkKey); err != nil {
		t.Fatal(err)
	}
	ucID, _ := sdkSignin(t, th, "uma")
	ctx := ctxT(t)
	uc, _ := th.db.GetUserChannel(ctx, ucID)
	defs, _ := th.Tools(ctx, "uma", "")
	names := []string{}
	for _, d := range defs {
		if d.Builtin {
			names = append(names, d.Name)
		}
	}
	if strings.Join(names, ",") != ToolChannelsList {
		t.Fatalf("built-in tools offered: %v", names)
	}
	res, err := th.Invoke(ctx, "uma", "", ToolChannelsList, nil, "l")
	var list listedChannels
	if err != nil || json.Unmarshal(res.Output, &list) != nil || len(list.Channels) != 1 || list.Channels[0].CanSend {
		t.Fatalf("list: %s %v", res.Output, err)
	}
	_, err = th.Invoke(ctx, "uma", "", ToolMessageSend, json.RawMessage(`{"connector_channel_id":"`+uc.ChannelID+`","text":"x"}`), "s")
	if code(err) != protocol.CodeUnsupportedPacket {
		t.Fatalf("send on IM v1: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if msgs, _, _, _ := fx.Target.Snapshot(); len(msgs) != 0 {
		t.Fatalf("target got %v", msgs)
	}
}
