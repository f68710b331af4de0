package connectortest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// TestAssistantSide plays an agent's answers as a host sends them: an
// activity, a streamed answer (deltas, then the final) and its repeat, a
// final with a file uploaded through the transfer plane, a final naming a
// file_ref that does not exist, a delta out of sequence; and it downloads
// a file the target published.
func TestAssistantSide(t *testing.T) {
	r := startRoom(t, 0)
	c := connect(t, r)
	ctx := ctxT(t)
	ch, st, err := c.OpenAndSignIn(ctx, flowRoom, map[string]string{"room": "lobby", "access_code": goodCode})
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in: %+v %v", st, err)
	}
	if err := c.SendActivity(ctx, ch, protocol.ChatActivityPayload{Status: protocol.ActivityThinking}); err != nil {
		t.Fatal(err)
	}
	streamed := protocol.ChatMessagePayload{MessageID: "a1", Text: "Hello, world"}
	ack, err := c.SendStream(ctx, ch, streamed, "Hello", ", world")
	if err != nil || ack.Status != protocol.AckAccepted || ack.MessageID != "a1" {
		t.Fatalf("streamed answer: %+v %v", ack, err)
	}
	if ack, err := c.SendFinal(ctx, ch, streamed); err != nil || ack.Status != protocol.AckDuplicate {
		t.Fatalf("the same final again: %+v %v", ack, err)
	}

	data := []byte("a file from the assistant\n")
	up, err := c.Upload(ctx, ch, "notes.txt", "text/plain", data)
	if err != nil || up.FileRef == "" || up.Filename != "notes.txt" || up.ByteSize != int64(len(data)) {
		t.Fatalf("upload: %+v %v", up, err)
	}
	ack, err = c.SendFinal(ctx, ch, protocol.ChatMessagePayload{MessageID: "a2", Text: "with a file",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: up.FileRef}}})
	if err != nil || ack.Status != protocol.AckAccepted {
		t.Fatalf("final with a file: %+v %v", ack, err)
	}
	ack, err = c.SendFinal(ctx, ch, protocol.ChatMessagePayload{MessageID: "a3", Text: "no such file",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: "file_nope"}}})
	if err != nil || ack.Status != protocol.AckRejected || ack.Code == "" {
		t.Fatalf("final with an unknown file_ref: %+v %v", ack, err)
	}
	if _, err := c.Upload(ctx, "cch_nope", "x.txt", "text/plain", data); err == nil {
		t.Fatal("an upload for a channel that does not exist was accepted")
	}

	// A delta out of sequence comes back as an error packet.
	if err := c.SendDelta(ctx, ch, protocol.ChatDeltaPayload{MessageID: "a4", Sequence: 3, Text: "gap"}); err != nil {
		t.Fatal(err)
	}
	if env, err := c.NextOfType(ctx, protocol.TypeError); err != nil || connectortest.AckError(env) == nil {
		t.Fatalf("a delta out of sequence: %+v %v", env, err)
	}
	if err := c.SendActivity(ctx, ch, protocol.ChatActivityPayload{Status: protocol.ActivityIdle}); err != nil {
		t.Fatal(err)
	}

	// The target publishes a file; the host downloads it.
	sch, err := r.srv.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	pic := []byte("\x89PNG\r\n\x1a\n not really")
	if _, err := sch.Publish(ctx, connector.UserMessage{MessageID: "u1", Text: "a picture",
		Files: []connector.OutgoingFile{{Name: "p.png", MimeType: "image/png", Content: bytes.NewReader(pic)}}}); err != nil {
		t.Fatal(err)
	}
	m, err := c.ExpectMessage(ctx, ch, 0)
	if err != nil || len(m.Files) != 1 {
		t.Fatalf("published message: %+v %v", m, err)
	}
	if got, err := c.Download(ctx, m.Files[0].DownloadURL); err != nil || !bytes.Equal(got, pic) {
		t.Fatalf("download: %q %v", got, err)
	}
	if _, err := c.Download(ctx, "/files/refs/file_nope?sig=x"); err == nil || !strings.Contains(err.Error(), "HTTP") {
		t.Fatalf("download of a bad URL: %v", err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Join(r.delivered, "|") != "Hello, world|with a file" || len(r.files) != 1 || r.files[0] != string(data) {
		t.Fatalf("the target got %q with files %q", r.delivered, r.files)
	}
	if strings.Join(r.streamed, "|") != "Hello|Hello, world" {
		t.Fatalf("the target saw the stream as %q", r.streamed)
	}
	// Activity runs in the channel's order: thinking before the first final.
	if len(r.activity) == 0 || r.activity[0] != protocol.ActivityThinking {
		t.Fatalf("the target saw activity %q", r.activity)
	}
}
