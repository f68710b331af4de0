package connector_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func sendChat(t *testing.T, c *connectortest.Client, ch string, p protocol.ChatMessagePayload) protocol.ChatAckPayload {
	t.Helper()
	env, _ := connectortest.Packet(protocol.TypeChatMessage, ch, p)
	ack, err := c.RoundTrip(testCtx(t), env)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Type != protocol.TypeChatMessageAck || ack.ReplyTo != env.PacketID || ack.ConnectorChannelID != ch || ack.RequestID != "" {
		t.Fatalf("ack envelope %+v", ack)
	}
	return decode[protocol.ChatAckPayload](t, ack)
}

func ackMessage(t *testing.T, c *connectortest.Client, msg *protocol.Envelope, status protocol.AckStatus, retry *bool) {
	t.Helper()
	p := decode[protocol.ChatMessagePayload](t, msg)
	env, _ := connectortest.Packet(protocol.TypeChatMessageAck, msg.ConnectorChannelID,
		protocol.ChatAckPayload{MessageID: p.MessageID, Status: status, Retryable: retry, Code: codeIf(status)})
	env.ReplyTo = msg.PacketID
	if err := c.Send(testCtx(t), env); err != nil {
		t.Fatal(err)
	}
}

func codeIf(s protocol.AckStatus) string {
	if s == protocol.AckRejected {
		return string(protocol.CodeChannelBusy)
	}
	return ""
}

func TestAssistantMessagesToTarget(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)

	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "hello"}); a.Status != protocol.AckAccepted {
		t.Fatalf("first delivery %+v", a)
	}
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "hello"}); a.Status != protocol.AckDuplicate {
		t.Fatalf("duplicate %+v", a)
	}
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a1", Text: "other"}); a.Status != protocol.AckRejected ||
		a.Code != string(protocol.CodeMessageConflict) || a.Retryable == nil || *a.Retryable {
		t.Fatalf("conflict %+v", a)
	}
	// Streaming: deltas go to the delta handler, then the final is marked Streamed.
	for i, part := range []string{"Hel", "lo!"} {
		d, _ := connectortest.Packet(protocol.TypeChatMessageDelta, ch, protocol.ChatDeltaPayload{MessageID: "a2", Sequence: int64(i + 1), Text: part})
		if err := c.Send(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// A repeated delta is ignored; a gap is rejected explicitly.
	dup, _ := connectortest.Packet(protocol.TypeChatMessageDelta, ch, protocol.ChatDeltaPayload{MessageID: "a2", Sequence: 2, Text: "lo!"})
	_ = c.Send(ctx, dup)
	gap, _ := connectortest.Packet(protocol.TypeChatMessageDelta, ch, protocol.ChatDeltaPayload{MessageID: "a2", Sequence: 5, Text: "x"})
	_ = c.Send(ctx, gap)
	env, err := c.NextOfType(ctx, protocol.TypeError)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, env, protocol.TypeError, protocol.CodeDeltaSequenceInvalid)
	act, _ := connectortest.Packet(protocol.TypeChatActivity, ch, protocol.ChatActivityPayload{Status: protocol.ActivityTool, ToolName: "search"})
	_ = c.Send(ctx, act)
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "Hello!"}); a.Status != protocol.AckAccepted {
		t.Fatalf("final %+v", a)
	}
	msgs, deltas, acts, _ := f.Target.Snapshot()
	if len(msgs) != 2 || msgs[0].Text != "hello" || msgs[0].Streamed || msgs[1].Text != "Hello!" || !msgs[1].Streamed {
		t.Fatalf("messages %+v", msgs)
	}
	if len(deltas) != 2 || deltas[1].Assembled != "Hello!" || deltas[1].Sequence != 2 {
		t.Fatalf("deltas %+v", deltas)
	}
	if len(acts) != 1 || acts[0].ToolName != "search" {
		t.Fatalf("activities %+v", acts)
	}

	// Failures: temporary -> retryable, permanent -> not, never a secret.
	f.Target.SetFailNext(connector.Temporary(errors.New("rate limited, token " + f.Opts.Canary)))
	a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a3", Text: "x"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || !*a.Retryable || strings.Contains(a.Message, f.Opts.Canary) {
		t.Fatalf("temporary %+v", a)
	}
	f.Target.SetFailNext(errors.New("account banned; token " + f.Opts.Canary))
	a = sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a4", Text: "x"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || *a.Retryable || a.Code != string(protocol.CodeTargetDeliveryFailed) ||
		strings.Contains(a.Message, f.Opts.Canary) {
		t.Fatalf("permanent %+v", a)
	}
	// The rejected message was not recorded: a redelivery succeeds.
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a3", Text: "x"}); a.Status != protocol.AckAccepted {
		t.Fatalf("redelivery after temporary failure %+v", a)
	}
	// Invalid payload: rejected, not retryable.
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a5"}); a.Status != protocol.AckRejected || *a.Retryable {
		t.Fatalf("empty message %+v", a)
	}
	// Unknown file_ref: rejected, not retryable.
	if a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "a6", Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "file_nope"}}}); a.Status != protocol.AckRejected || *a.Retryable {
		t.Fatalf("unknown file %+v", a)
	}
	checkWire(t, c)
}

func TestAssistantMessageWithUploadedFile(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: "system-key-123456"})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	up := upload(t, f, ch, "system-key-123456", "notes.txt", []byte("file body"))
	if up.FileType != protocol.FileFile || up.ByteSize != 9 || up.Filename != "notes.txt" || up.ExpiresAt <= time.Now().UnixMilli() {
		t.Fatalf("upload %+v", up)
	}
	a := sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "f1", Text: "see file",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: up.FileRef}}})
	if a.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", a)
	}
	if got := f.Target.FileBytes(up.FileRef); string(got) != "file body" {
		t.Fatalf("target got %q", got)
	}
	// A tool reads the same file through the channel.
	env := invoke(t, c, ch, sdkfixture.ToolReadFile, `{"connector_channel_id":"`+ch+`","file_ref":"`+up.FileRef+`"}`, "")
	wantOK(t, env, protocol.TypeToolInvokeAck)
	if r := decode[protocol.ToolInvokeAckPayload](t, env); !strings.Contains(string(r.Result), `"bytes":9`) {
		t.Fatalf("read file %s", r.Result)
	}
}

func upload(t *testing.T, f *sdkfixture.Fixture, ch, key, name string, body []byte) protocol.UploadResponse {
	t.Helper()
	resp := postUpload(t, f.URL, ch, key, name, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("upload status %d: %s", resp.StatusCode, b)
	}
	var up protocol.UploadResponse
	if err := decodeJSON(resp.Body, &up); err != nil {
		t.Fatal(err)
	}
	return up
}

func TestPublishDurableRedelivery(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Adjust: func(o *connector.Options) { o.AckTimeout = 300 * time.Millisecond }})
	c, cid := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)
	h, _ := f.Server.Channel(ch)
	if err := h.Publish(ctx, connector.UserMessage{MessageID: "u1", Text: "hi there",
		Files: []connector.OutgoingFile{{Name: "pic.png", MimeType: "image/png", Content: bytes.NewReader([]byte("\x89PNG fake"))}}}); err != nil {
		t.Fatal(err)
	}
	msg, err := c.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if vs := protocol.ValidatePayload(msg, protocol.ToHost); len(vs) > 0 {
		t.Fatalf("chat.message invalid: %v", vs)
	}
	p := decode[protocol.ChatMessagePayload](t, msg)
	if p.MessageID != "u1" || p.Text != "hi there" || len(p.Files) != 1 || p.Files[0].Type != protocol.FileImage {
		t.Fatalf("payload %+v", p)
	}
	// The signed download URL works without headers; a tampered one is 403.
	resp, err := http.Get(f.URL + p.Files[0].DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "\x89PNG fake" || resp.Header.Get("Content-Type") != "image/png" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "pic.png") {
		t.Fatalf("download %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, err = http.Get(f.URL + p.Files[0].DownloadURL[:len(p.Files[0].DownloadURL)-3] + "AAA")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("tampered signature: %d", resp.StatusCode)
	}
	// No ack: disconnect. The message stays pending and comes back after
	// reconnect + channel.open, with the same message_id.
	c.Close()
	c2, again := f.Connect(t, cid)
	if again != cid {
		t.Fatal("connector id changed")
	}
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	msg2, err := c2.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if p2 := decode[protocol.ChatMessagePayload](t, msg2); p2.MessageID != "u1" {
		t.Fatalf("redelivered %+v", p2)
	}
	// A retryable rejection keeps it pending; accepted finishes it.
	retry := true
	ackMessage(t, c2, msg2, protocol.AckRejected, &retry)
	msg3, err := c2.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	ackMessage(t, c2, msg3, protocol.AckAccepted, nil)
	// Publishing the same message_id again is a no-op.
	if err := h.Publish(ctx, connector.UserMessage{MessageID: "u1", Text: "hi there"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish(ctx, connector.UserMessage{MessageID: "u2", Text: "next"}); err != nil {
		t.Fatal(err)
	}
	next, err := c2.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.ChatMessagePayload](t, next); p.MessageID != "u2" {
		t.Fatalf("after accepted, got %s again", p.MessageID)
	}
	ackMessage(t, c2, next, protocol.AckAccepted, nil)
	if err := h.Publish(context.Background(), connector.UserMessage{}); err == nil {
		t.Fatal("empty message published")
	}
}

func TestPublishSurvivesRestart(t *testing.T) {
	t.Parallel()
	st := connectortest.NewStore(t)
	dir := t.TempDir()
	f1 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: st, DataDir: dir})
	c, cid := f1.Connect(t, "")
	ch := openSigned(t, c)
	c.Close()
	h, _ := f1.Server.Channel(ch)
	if err := h.Publish(testCtx(t), connector.UserMessage{MessageID: "durable-1", Text: "kept on disk"}); err != nil {
		t.Fatal(err)
	}
	f1.Close()
	f2 := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{Store: st, DataDir: dir})
	c2, again := f2.Connect(t, cid)
	if again != cid {
		t.Fatal("connector_id not restored after restart")
	}
	ctx := testCtx(t)
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	msg, err := c2.NextOfType(ctx, protocol.TypeChatMessage)
	if err != nil {
		t.Fatal(err)
	}
	if p := decode[protocol.ChatMessagePayload](t, msg); p.MessageID != "durable-1" {
		t.Fatalf("after restart got %+v", p)
	}
	ackMessage(t, c2, msg, protocol.AckAccepted, nil)
}

// TestChatAckEchoesRequestID: a chat.message that carries a request_id gets
// its ack with that request_id unchanged (section 7: the Connector "must
// return it unchanged"), whatever the verdict; one without gets an ack
// without (IM v2's examples carry none). The SDK used to blank it, so an
// xAgent that matches acks by request_id never saw its messages acked.
func TestChatAckEchoesRequestID(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	ch := openSigned(t, c)
	ctx := testCtx(t)
	for i, tt := range []struct {
		p    protocol.ChatMessagePayload
		want protocol.AckStatus
	}{
		{protocol.ChatMessagePayload{MessageID: "rq1", Text: "hello"}, protocol.AckAccepted},
		{protocol.ChatMessagePayload{MessageID: "rq1", Text: "hello"}, protocol.AckDuplicate},
		{protocol.ChatMessagePayload{MessageID: "rq1", Text: "other"}, protocol.AckRejected},
	} {
		env, _ := connectortest.Packet(protocol.TypeChatMessage, ch, tt.p)
		env.RequestID = "req_chat_" + string(rune('a'+i)) + "\"<&>"
		if err := c.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
		ack, err := c.NextMatch(ctx, func(e *protocol.Envelope) bool { return e.ReplyTo == env.PacketID })
		if err != nil {
			t.Fatal(err)
		}
		a := decode[protocol.ChatAckPayload](t, ack)
		if ack.Type != protocol.TypeChatMessageAck || a.Status != tt.want || ack.RequestID != env.RequestID {
			t.Fatalf("ack %s %s request_id %q, want %s with request_id %q", ack.Type, a.Status, ack.RequestID, tt.want, env.RequestID)
		}
	}
}
