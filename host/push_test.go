package host

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/protocol"
)

// legacyHost admits an IM v1 fake connector, signs a channel in and
// returns it with the user channel; agent receives the messages.
func legacyHost(t *testing.T, agent Agent) (*testHost, *fakeConnector, string) {
	t.Helper()
	f := newFakeConnector(t, "im.legacy", "")
	th := newTestHost(t, "", func(o *Options) { o.Agent = agent })
	f.set(func(f *fakeConnector) {
		f.card.Supports.Profiles = []protocol.Profile{protocol.ProfileIMv1}
		for i := range f.card.Tools {
			f.card.Tools[i].Profile = protocol.ProfileIMv1
		}
		f.downloads["f_1"] = []byte("v1 file body")
	})
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "ola", "im.legacy")
	return th, f, uc.ChannelID
}

// pushOf is a valid IM v1 message.push payload.
func pushOf(id string) protocol.MessagePushPayload {
	return protocol.MessagePushPayload{Provider: "legacy", Profile: protocol.ProfileIMv1, EventKind: protocol.IMv1EventMessageReceived,
		MessageID: id, SenderID: "u1", MessageType: "file", RawText: "", Text: "User message: a file"}
}

func sendPush(f *fakeConnector, channel, packetID string, p protocol.MessagePushPayload) {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: packetID, ConnectorChannelID: channel, Type: protocol.TypeMessagePush}
	_ = env.SetPayload(p)
	f.sendOn(channel, env)
}

// TestMessagePushFileURL is issue 35 item 3: an IM v1 file that spells its
// address url (IM v1 section 9) is downloaded like one with download_url,
// and the target Session member of the push reaches the Agent typed. The
// host used to read download_url only and fetch the connector's root page
// for the empty one.
func TestMessagePushFileURL(t *testing.T) {
	t.Parallel()
	got := make(chan *UserMessage, 4)
	th, f, ch := legacyHost(t, AgentFunc(func(_ context.Context, m *UserMessage, _ ReplyStream) error { got <- m; return nil }))
	p := pushOf("v1-url")
	p.TargetSessionRef = "sess-ref-7"
	p.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1", Filename: "a.txt", URL: "/files/refs/f_1"}}
	sendPush(f, ch, "p-url", p)
	select {
	case m := <-got:
		if len(m.Files) != 1 {
			t.Fatalf("files %+v", m.Files)
		}
		b, err := os.ReadFile(m.Files[0].Path)
		if err != nil || string(b) != "v1 file body" {
			t.Fatalf("file %q %v", b, err)
		}
		if m.TargetSession == nil || m.TargetSession.Field != SessionTargetRef || m.TargetSession.Ref != "sess-ref-7" {
			t.Fatalf("target session %+v", m.TargetSession)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message.push with a url file did not reach the agent")
	}
	if n := th.failedPushes(t, "im.legacy"); n != 0 {
		t.Fatalf("%d failed pushes", n)
	}
}

// failedPushes returns the connector's FailedPushes.
func (th *testHost) failedPushes(t *testing.T, cardID string) int64 {
	t.Helper()
	c, ok := th.Connector(cardID)
	if !ok {
		t.Fatalf("no connector %s", cardID)
	}
	return c.FailedPushes
}

// TestMessagePushFailuresRecorded is issue 35 items 3 and 7: a
// message.push that does not reach the Agent is never dropped without a
// trace (IM v1 section 8): each is counted in Connector.FailedPushes and
// reported as an EventPushFailed naming its message_id; a malformed one
// (IM v1 section 5: sender_id; section 9: an address per file, an empty
// one is not the connector's root page) or one on a channel that is not
// open is also answered with an error packet naming its packet_id.
func TestMessagePushFailuresRecorded(t *testing.T) {
	t.Parallel()
	refuse := errors.New("agent refuses")
	th, f, ch := legacyHost(t, AgentFunc(func(_ context.Context, m *UserMessage, _ ReplyStream) error {
		if m.MessageID == "v1-agent-fails" {
			return refuse
		}
		return nil
	}))
	tests := []struct {
		name     string
		channel  string
		edit     func(*protocol.MessagePushPayload)
		wantCode protocol.Code // of the error packet; "" for none
		event    string        // in the event's Detail
	}{
		{"no sender_id", ch, func(p *protocol.MessagePushPayload) { p.SenderID = "" }, protocol.CodeInvalidPacket, "sender_id"},
		{"file without an address", ch, func(p *protocol.MessagePushPayload) {
			p.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_1"}}
		}, protocol.CodeInvalidPacket, "download_url or url"},
		{"two target sessions", ch, func(p *protocol.MessagePushPayload) { p.SessionRef, p.TargetSessionID = "a", "b" }, protocol.CodeInvalidPacket, "at most one"},
		{"file not found", ch, func(p *protocol.MessagePushPayload) {
			p.Files = []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "f_2", URL: "/files/refs/f_2"}}
		}, "", string(CodeFileDownloadFailed)},
		{"agent fails", ch, func(*protocol.MessagePushPayload) {}, "", string(protocol.CodeInternal)},
		{"channel not open", "cch_nobody", func(*protocol.MessagePushPayload) {}, protocol.CodeChannelNotOpen, string(protocol.CodeChannelNotOpen)},
	}
	ids := map[string]string{"agent fails": "v1-agent-fails"}
	for i, tt := range tests {
		id := ids[tt.name]
		if id == "" {
			id = "v1-bad-" + string(rune('a'+i))
		}
		p := pushOf(id)
		tt.edit(&p)
		pkt := "p-" + id
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: pkt, ConnectorChannelID: tt.channel, Type: protocol.TypeMessagePush}
		_ = env.SetPayload(p)
		f.sendOn(ch, env) // on the open channel's socket, naming tt.channel
		eventually(t, tt.name+": recorded", func() bool {
			return th.events.has(EventPushFailed, func(e Event) bool {
				return strings.HasPrefix(e.Detail, id+" ") && strings.Contains(e.Detail, tt.event)
			})
		})
		var answer *protocol.Envelope
		for _, e := range f.packets(protocol.TypeError) {
			if e.ReplyTo == pkt {
				answer = e
			}
		}
		switch {
		case tt.wantCode == "" && answer != nil:
			t.Errorf("%s: error packet %+v for a push that was well formed", tt.name, answer.Error)
		case tt.wantCode != "" && (answer == nil || answer.Error == nil || answer.Error.Code != string(tt.wantCode)):
			t.Errorf("%s: answer %+v, want an error packet %s with reply_to %s", tt.name, answer, tt.wantCode, pkt)
		}
	}
	if n := th.failedPushes(t, "im.legacy"); n != int64(len(tests)) {
		t.Fatalf("FailedPushes = %d, want %d", n, len(tests))
	}
}

// TestHostAnswersBadPackets is issue 35 item 7: the host answers what a
// connector must not send with an error packet (sections 7 and 8.23):
// a frame that is no JSON packet invalid_packet, a packet without schema
// or packet_id invalid_packet, an unknown type or a packet only xAgent
// sends unsupported_packet, each with reply_to its packet_id. A packet of
// a Profile that travels only to the connector is dropped silently (IM
// v2 section 10), as is an ack that matches no request in flight.
func TestHostAnswersBadPackets(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	uc := th.signinRoom(t, "ola", "im.fake")
	ch := uc.ChannelID
	send := func(env *protocol.Envelope) { f.sendOn(ch, env) }
	pkt := func(id, typ string) *protocol.Envelope {
		return &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: id, RequestID: "r-" + id, ConnectorChannelID: ch, Type: typ}
	}
	send(pkt("p-unknown", "foo.bar"))
	send(pkt("p-hello", protocol.TypeHello))
	send(pkt("p-invoke", protocol.TypeToolInvoke))
	noSchema := pkt("p-noschema", protocol.TypeMessagePush)
	noSchema.Schema = ""
	send(noSchema)
	send(pkt("p-delta", protocol.TypeChatMessageDelta))
	send(pkt("p-late", protocol.TypeAuthStatusAck))
	f.mu.Lock()
	conn := f.channels[ch].conn
	f.mu.Unlock()
	if err := conn.SendRaw(ctxT(t), []byte(`{"schema":`)); err != nil {
		t.Fatal(err)
	}
	want := map[string]protocol.Code{"p-unknown": protocol.CodeUnsupportedPacket, "p-hello": protocol.CodeUnsupportedPacket,
		"p-invoke": protocol.CodeUnsupportedPacket, "p-noschema": protocol.CodeInvalidPacket, "": protocol.CodeInvalidPacket}
	eventually(t, "an error packet for each bad packet", func() bool { return len(f.packets(protocol.TypeError)) >= len(want) })
	// A ping after them: its pong comes after every answer to them.
	send(&protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "p-ping", RequestID: "r-ping", Type: protocol.TypePing})
	eventually(t, "pong", func() bool { return f.count(protocol.TypePong) > 0 })
	got := map[string]protocol.Code{}
	for _, e := range f.packets(protocol.TypeError) {
		if e.Error == nil {
			t.Fatalf("error packet without an error: %+v", e)
		}
		got[e.ReplyTo] = protocol.Code(e.Error.Code)
		if e.ReplyTo != "" && e.RequestID != "r-"+e.ReplyTo {
			t.Errorf("error for %s carries request_id %q", e.ReplyTo, e.RequestID)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %v (the delta and the late ack answered nothing)", got, want)
	}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("%q answered %q, want %q", id, got[id], code)
		}
	}
}
