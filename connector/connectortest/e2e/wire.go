package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// runWire is the wire scenario of Run: a bare data-plane client plays the
// host's side of the assistant (activity, a streamed answer, a repeat, a
// final with an uploaded file) and of a few refusals, and no frame the
// connector sends holds a secret.
func runWire(t *testing.T, tg Target) {
	r := newRig(t, tg)
	f := r.fake
	ctx := t.Context()
	cl := r.conn.Dial(t)
	defer func() {
		s := r.secrets
		if f.Secrets != nil {
			s = s.With(f.Secrets()...)
		}
		s.Check(t, "a frame the connector sent", strings.Join(cl.Transcript(), "\n"))
	}()

	ch := signInWire(t, cl.Client, r.signIn)
	if bad := tg.BadSignIn; bad != nil {
		// Refused at auth.start (an error) or later (a failed state).
		_, _, err := cl.OpenAndSignIn(ctx, tg.SignIn.Flow, bad.Input)
		if !refusedWith(err, bad.Message) {
			t.Errorf("a refused sign-in: %v, want a refusal saying %q", err, bad.Message)
		}
	}
	_, err := connectortest.Invoke[map[string]any](ctx, cl.Client, ch, "e2e_no_such_tool", nil)
	if pe := protocol.AsError(err); pe == nil || pe.Code != protocol.CodeUnknownTool {
		t.Errorf("an unknown tool: %v, want unknown_tool", err)
	}
	if !r.card.DeclaresProfile(protocol.ProfileIMv2) {
		return
	}
	if f.isChat() {
		// A person writes first, as on targets where a bot cannot.
		f.say(t, "hello over the wire")
		m, err := cl.ExpectMessage(ctx, ch, Wait)
		if err != nil {
			t.Fatal(err)
		}
		if m.Text != "hello over the wire" || m.MessageID == "" {
			t.Errorf("the person's message arrived as %+v", m.ChatMessagePayload)
		}
		if err := cl.Ack(ctx, m, protocol.AckAccepted); err != nil {
			t.Fatal(err)
		}
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("activity", cl.SendActivity(ctx, ch, protocol.ChatActivityPayload{Status: protocol.ActivityThinking}))
	streamed := protocol.ChatMessagePayload{MessageID: "e2e-wire-1", Text: "streamed over the wire"}
	ack, err := cl.SendStream(ctx, ch, streamed, "streamed ", "over the ", "wire")
	must("a streamed answer", err)
	expectAck(t, "a streamed answer", ack, protocol.AckAccepted)
	ack, err = cl.SendFinal(ctx, ch, streamed)
	must("the same final again", err)
	expectAck(t, "the same final again", ack, protocol.AckDuplicate)

	up, err := cl.Upload(ctx, ch, "notes.txt", "text/plain", []byte("a file from the assistant\n"))
	must("upload", err)
	withFile := protocol.ChatMessagePayload{MessageID: "e2e-wire-2", Text: "with a file",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: up.FileRef, Filename: "notes.txt", MimeType: "text/plain"}}}
	ack, err = cl.SendFinal(ctx, ch, withFile)
	must("a final with a file", err)
	expectAck(t, "a final with a file", ack, protocol.AckAccepted)
	must("activity", cl.SendActivity(ctx, ch, protocol.ChatActivityPayload{Status: protocol.ActivityIdle}))
	if f.isChat() {
		if got := f.Posted(t); Count(got, streamed.Text) != 1 {
			t.Errorf("%q posted %d times, want once; the target shows %q", streamed.Text, Count(got, streamed.Text), got)
		}
	}
}

// signInWire opens a channel and signs it in with s over cl.
func signInWire(t *testing.T, cl *connectortest.Client, s SignIn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Wait)
	defer cancel()
	open, err := cl.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ch := open.ConnectorChannelID
	if s.Confirm != nil {
		_, err = cl.SignInQR(ctx, ch, s.Flow, s.Confirm)
	} else {
		_, err = cl.SignInForm(ctx, ch, s.Flow, s.Input)
	}
	if err != nil {
		t.Fatalf("sign-in: %v", err)
	}
	return ch
}

func expectAck(t *testing.T, what string, ack *protocol.ChatAckPayload, want protocol.AckStatus) {
	t.Helper()
	if ack.Status != want {
		t.Errorf("%s: ack %+v, want %s", what, ack, want)
	}
}

// refusedWith reports whether err is a sign-in refusal that says msg.
func refusedWith(err error, msg string) bool {
	var se *connectortest.SignInError
	if errors.As(err, &se) {
		return strings.Contains(se.State.Message, msg)
	}
	return err != nil && strings.Contains(err.Error(), msg)
}
