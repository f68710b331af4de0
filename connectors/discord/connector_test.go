package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/discord/discordtest"
	"github.com/xconn/xconn/protocol"
)

// TestSignIn: the form's refusals each say what to fix, Message Content
// switched off in the Developer Portal (Gateway close 4014) says how to
// switch it on, and a guild channel and a DM bind; the token is in no
// refusal.
func TestSignIn(t *testing.T) {
	f := newFake(t, false)
	cl := startConn(t, f, "", nil).Dial(t)
	const wrong = "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gx9999.wrong-bot-token-0000000000000000000"
	for _, tc := range []struct {
		name      string
		token     string
		channel   string
		noContent bool
		want      string // part of the refusal; "" binds
	}{
		{"guild channel", botToken, general, false, ""},
		{"DM", botToken, dmAlice, false, ""},
		{"token with Bot prefix", "Bot " + botToken, general, false, ""},
		{"channel not an id", botToken, "#general", false, "channel_id must be a Discord channel id"},
		{"not a token", "xoxb-123", general, false, "not a Discord bot token"},
		{"wrong token", wrong, general, false, "does not accept this bot token"},
		{"hidden channel", botToken, hidden, false, "cannot see channel " + hidden},
		{"unknown channel", botToken, "1100000000000000099", false, "cannot see channel"},
		{"voice channel", botToken, voice, false, "is not a text channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.SetMessageContent(botToken, !tc.noContent)
			defer f.SetMessageContent(botToken, true)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, st, err := cl.OpenAndSignIn(ctx, FlowBot, map[string]string{"bot_token": tc.token, "channel_id": tc.channel})
			if tc.want == "" {
				if err != nil || st.Status != protocol.AuthAuthenticated {
					t.Fatalf("sign-in: %+v, %v", st, err)
				}
				b, _ := json.Marshal(st)
				secrets.Check(t, "the auth state", string(b))
				return
			}
			if err == nil {
				t.Fatalf("signed in, want a refusal saying %q", tc.want)
			}
			msg := err.Error() + " " + signInMessage(err)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("refusal %q, want it to say %q", msg, tc.want)
			}
			secrets.With(wrong).Check(t, "the refusal", msg)
		})
	}
}

// TestSignInMessageContentIntent: a bot whose Message Content intent is
// off in the Developer Portal is refused at sign-in (Gateway close 4014)
// with how to switch it on; once on, the same sign-in binds.
func TestSignInMessageContentIntent(t *testing.T) {
	f := newFake(t, true)
	cl := startConn(t, f, "", nil).Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, _, err := cl.OpenAndSignIn(ctx, FlowBot, login)
	msg := fmt.Sprint(err) + " " + signInMessage(err)
	if !strings.Contains(msg, "close 4014") || !strings.Contains(msg, "Privileged Gateway Intents, switch on MESSAGE CONTENT INTENT") {
		t.Fatalf("refusal %v %q, want how to switch Message Content on", err, msg)
	}
	secrets.Check(t, "the refusal", msg)
	f.SetMessageContent(botToken, true)
	if _, st, err := cl.OpenAndSignIn(ctx, FlowBot, login); err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in with the intent on: %+v, %v", st, err)
	}
}

// signedIn serves the connector on f and signs a channel in to #general.
func signedIn(t *testing.T, f *discordtest.Server, mod func(*Options)) (*e2e.Client, string) {
	t.Helper()
	cl := startConn(t, f, "", mod).Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	e2e.Eventually(t, "the Gateway connection", func() bool { return f.Connected(botToken) == 1 })
	return cl, ch
}

// TestMessagesBothWays: a person's reply with an attachment is published
// with its text and the file (downloaded from the CDN); the answer is a
// Discord reply to it, split into parts of at most 2,000 characters with
// nothing lost, and its file is posted as an attachment.
func TestMessagesBothWays(t *testing.T) {
	f := newFake(t, false)
	cl, ch := signedIn(t, f, nil)
	first := f.Say(general, alice, "first")
	cl.ExpectAccept(ch)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 3000)...)
	id := f.SayReply(general, alice, first, "see the chart", discordtest.File{Name: "chart.png", ContentType: "image/png", Data: png})
	m := cl.ExpectAccept(ch)
	if m.MessageID != "dc-"+id || m.Text != "see the chart" || len(m.Files) != 1 {
		t.Fatalf("published %+v", m.ChatMessagePayload)
	}
	if fl := m.Files[0]; fl.Filename != "chart.png" || fl.MimeType != "image/png" || fl.Type != protocol.FileImage ||
		!bytes.Equal(cl.Fetch(fl.DownloadURL), png) {
		t.Fatalf("file %+v", fl)
	}

	var words []string
	for i := range 700 {
		words = append(words, fmt.Sprintf("wörd%03d", i)) // 7 characters, 8 bytes
	}
	long := strings.Join(words, " ")
	ref := cl.Put(ch, "report.txt", "text/plain", []byte("the report"))
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "answer-1", InReplyTo: m.MessageID, Text: long,
		Files: []protocol.ChatFile{{FileRef: ref, Filename: "report.txt", MimeType: "text/plain", Type: protocol.FileFile}}})
	if ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	sent := f.Sent(general)
	if len(sent) != 4 {
		t.Fatalf("%d messages posted, want 3 parts and the file: %+v", len(sent), sent)
	}
	var got []string
	for i, s := range sent[:3] {
		if n := len([]rune(s.Text)); n > MaxTextLen || n == 0 {
			t.Errorf("part %d has %d characters", i, n)
		}
		got = append(got, strings.Fields(s.Text)...)
	}
	if strings.Join(got, " ") != long {
		t.Errorf("the parts do not add up to the answer")
	}
	if sent[0].ReplyTo != id || sent[1].ReplyTo != "" {
		t.Errorf("replies to %q, %q; want the first part only to reply to %s", sent[0].ReplyTo, sent[1].ReplyTo, id)
	}
	if fl := sent[3].Files; len(fl) != 1 || fl[0].Name != "report.txt" || string(fl[0].Data) != "the report" {
		t.Errorf("attachment %+v", fl)
	}
	// A repeated final (the host did not see the ack) posts nothing new.
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "answer-1", InReplyTo: m.MessageID, Text: long,
		Files: []protocol.ChatFile{{FileRef: ref, Filename: "report.txt", MimeType: "text/plain", Type: protocol.FileFile}}}); ack.Status != protocol.AckDuplicate {
		t.Fatalf("repeat ack %+v", ack)
	}
	if n := len(f.Sent(general)); n != 4 {
		t.Fatalf("a repeated final posted again: %d messages", n)
	}
}

// TestStreamUnderRateLimits: a streamed answer is one message edited in
// place while the route's bucket allows 2 calls per 400 ms and one edit is
// refused with 429 retry_after: the edits wait (X-RateLimit-* and
// retry_after), none is lost, the final text is the whole answer, and the
// edits are spaced by the edit interval.
func TestStreamUnderRateLimits(t *testing.T) {
	f := newFake(t, false)
	cl, ch := signedIn(t, f, func(o *Options) { o.EditInterval = 100 * time.Millisecond })
	f.Say(general, alice, "tell me a story")
	m := cl.ExpectAccept(ch)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	f.SetRateLimit(2, 400*time.Millisecond)
	f.FailNext(botToken, discordtest.RouteEdit, 429, 300*time.Millisecond)
	start := time.Now()
	var whole strings.Builder
	for i := range 40 {
		d := fmt.Sprintf("part %d. ", i)
		whole.WriteString(d)
		if err := cl.SendDelta(ctx, ch, protocol.ChatDeltaPayload{MessageID: "story", Sequence: int64(i + 1), Text: d, InReplyTo: m.MessageID}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Millisecond)
	}
	waitSent(t, f, general, "the streamed message edited", func(s []discordtest.Sent) bool { return len(s) == 1 && len(s[0].Edits) >= 2 })
	final := strings.TrimSpace(whole.String())
	if ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "story", InReplyTo: m.MessageID, Text: final}); ack.Status != protocol.AckAccepted {
		t.Fatalf("ack %+v", ack)
	}
	took := time.Since(start)
	sent := f.Sent(general)
	if len(sent) != 1 || sent[0].Text != final || sent[0].ReplyTo == "" {
		t.Fatalf("posted %+v, want one reply reading %q", sent, final)
	}
	edits := f.Calls(botToken, discordtest.RouteEdit)
	if max := int(took/(100*time.Millisecond)) + 3; edits > max {
		t.Errorf("%d edits in %v: more than one per edit interval", edits, took)
	}
	t.Logf("%d edits (one refused with 429) in %v", edits, took.Round(time.Millisecond))
}

// TestSendTool: discord_message_send posts text and a file to the bound
// channel, once per tool call.
func TestSendTool(t *testing.T) {
	f := newFake(t, false)
	cl, ch := signedIn(t, f, nil)
	ref := cl.Put(ch, "notes.txt", "text/plain", []byte("some notes"))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := connectortest.Invoke[SendResult](ctx, cl.Client, ch, ToolSend, map[string]any{"text": "a reminder", "file": ref})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Sent(general)
	if len(sent) != 2 || sent[0].Text != "a reminder" || len(sent[1].Files) != 1 || string(sent[1].Files[0].Data) != "some notes" {
		t.Fatalf("posted %+v", sent)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), sent[0].ID) {
		t.Errorf("result %s does not name message %s", b, sent[0].ID)
	}
}

// TestRevokedToken: a token reset in the Developer Portal rejects the
// next answer (not retryable, saying to sign in again) and ends the
// Gateway connection; the token is in no ack.
func TestRevokedToken(t *testing.T) {
	f := newFake(t, false)
	cl, ch := signedIn(t, f, nil)
	f.Revoke(botToken)
	ack := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "late", Text: "too late"})
	if ack.Status != protocol.AckRejected || !strings.Contains(ack.Message, "sign in again") {
		t.Fatalf("ack %+v", ack)
	}
	b, _ := json.Marshal(ack)
	secrets.Check(t, "the ack", string(b))
	e2e.Eventually(t, "no Gateway connection", func() bool { return f.Connected(botToken) == 0 })
}
