package telegram

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

// testPNG is a small real PNG.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInboundExactlyOnceAcrossRestart: a text and a photo written in the
// bound chat reach xAgent once each with stable message ids and the
// photo's bytes behind its download_url; the other chat's message and
// the message written before the sign-in do not. After a restart on the
// same data directory, the unacknowledged photo is redelivered, the
// acknowledged text is not, and no update is published twice.
func TestInboundExactlyOnceAcrossRestart(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	f.SendText(testToken, testChat, "written before the sign-in")
	time.Sleep(1100 * time.Millisecond) // Telegram dates have one-second resolution
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()

	textID := f.SendText(testToken, testChat, "hello bot")
	f.SendText(testToken, otherChat, "another chat")
	pic := testPNG(t)
	photoID := f.SendFile(testToken, testChat, "photo", "", "", pic, "a picture")

	m1, err := cl.ExpectMessage(ctx, ch, wait)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, cn.Logs.String())
	}
	if m1.Text != "hello bot" || m1.MessageID != fmt.Sprintf("tg-%d-%d", testChat, textID) || len(m1.Files) != 0 {
		t.Fatalf("first message %+v", m1.ChatMessagePayload)
	}
	// The outbox keeps a channel's order: the photo follows the text's ack.
	if err := cl.Ack(ctx, m1, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	m2, err := cl.ExpectMessage(ctx, ch, wait)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, cn.Logs.String())
	}
	if m2.Text != "a picture" || m2.MessageID != fmt.Sprintf("tg-%d-%d", testChat, photoID) || len(m2.Files) != 1 {
		t.Fatalf("photo message %+v", m2.ChatMessagePayload)
	}
	if file := m2.Files[0]; file.Type != protocol.FileImage || file.MimeType != "image/png" || file.DownloadURL == "" {
		t.Fatalf("photo file %+v", file)
	}
	if got := cl.Fetch(m2.Files[0].DownloadURL); !bytes.Equal(got, pic) {
		t.Fatalf("download_url served %d bytes, want the photo's %d", len(got), len(pic))
	}
	// Nothing else: not the other chat's message, not the earlier one.
	if m, err := cl.ExpectMessage(ctx, ch, 500*time.Millisecond); err == nil {
		t.Fatalf("unexpected message %+v", m.ChatMessagePayload)
	}

	cl.Close()
	cn.Stop()
	cn = startConn(t, dir, api, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	if _, err := cl.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	again, err := cl.ExpectMessage(ctx, ch, wait)
	if err != nil {
		t.Fatal(err)
	}
	if again.MessageID != m2.MessageID || len(again.Files) != 1 {
		t.Fatalf("after the restart got %+v, want the unacknowledged photo", again.ChatMessagePayload)
	}
	if got := cl.Fetch(again.Files[0].DownloadURL); !bytes.Equal(got, pic) {
		t.Fatal("the photo is gone after the restart")
	}
	if err := cl.Ack(ctx, again, protocol.AckAccepted); err != nil {
		t.Fatal(err)
	}
	// A new message after the restart arrives once; nothing old comes back.
	newID := f.SendText(testToken, testChat, "after the restart")
	m3, err := cl.ExpectMessage(ctx, ch, wait)
	if err != nil {
		t.Fatal(err)
	}
	if m3.MessageID != fmt.Sprintf("tg-%d-%d", testChat, newID) {
		t.Fatalf("after the restart got %+v, want only the new message", m3.ChatMessagePayload)
	}
	cl.Ack(ctx, m3, protocol.AckAccepted)
	if m, err := cl.ExpectMessage(ctx, ch, 700*time.Millisecond); err == nil {
		t.Fatalf("replayed %+v", m.ChatMessagePayload)
	}
	e2e.Eventually(t, "every update confirmed to Telegram", func() bool { return f.Pending(testToken) == 0 })
	if n := f.MaxPollers(testToken); n != 1 {
		t.Errorf("%d concurrent getUpdates calls, want 1", n)
	}
}

// TestInboundFiles: a document, a voice message, audio and a video are
// published with their types, names and bytes.
func TestInboundFiles(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	ctx := t.Context()
	for _, tc := range []struct {
		kind, name, mime string
		typ              protocol.FileType
	}{
		{"document", "report.pdf", "application/pdf", protocol.FileFile},
		{"voice", "", "audio/ogg", protocol.FileAudio},
		{"audio", "song.mp3", "audio/mpeg", protocol.FileAudio},
		{"video", "clip.mp4", "video/mp4", protocol.FileVideo},
	} {
		data := []byte("bytes of " + tc.kind)
		f.SendFile(testToken, testChat, tc.kind, tc.name, tc.mime, data, "")
		m, err := cl.ExpectMessage(ctx, ch, wait)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if len(m.Files) != 1 || m.Files[0].Type != tc.typ || m.Files[0].MimeType != tc.mime || m.Text != "" {
			t.Fatalf("%s: %+v", tc.kind, m.ChatMessagePayload)
		}
		if tc.name != "" && m.Files[0].Filename != tc.name {
			t.Errorf("%s: filename %q", tc.kind, m.Files[0].Filename)
		}
		if got := cl.Fetch(m.Files[0].DownloadURL); !bytes.Equal(got, data) {
			t.Errorf("%s: bytes %q", tc.kind, got)
		}
		cl.Ack(ctx, m, protocol.AckAccepted)
	}
}
