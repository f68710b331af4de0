package slacktest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/slack/slacktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	appToken = "xapp-1-A0TEST-1111-aaaaaaaaaaaaaaaa"
	botToken = "xoxb-1111-2222-bbbbbbbbbbbbbbbbbbbbbbbb"
	channel  = "C0GENERAL"
	dm       = "D0ALICE"
	alice    = "U0ALICE"
)

var app = slacktest.App{AppToken: appToken, BotToken: botToken, AppID: "A0TEST", TeamID: "T0TEAM", Team: "Acme",
	BotUserID: "U0BOT", BotID: "B0BOT", BotName: "xconn"}

func newFake(t *testing.T, o slacktest.Options) (*slacktest.Server, string) {
	t.Helper()
	f := slacktest.New(o)
	f.AddApp(app)
	f.AddConversation(slacktest.Conversation{ID: channel, Name: "general"})
	f.AddConversation(slacktest.Conversation{ID: dm, User: alice})
	f.AddConversation(slacktest.Conversation{ID: "C0SECRET", Name: "secret", NotMember: true})
	url := f.Start()
	t.Cleanup(f.Close)
	return f, url
}

func client(url, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(url), slack.OptionAppLevelToken(appToken),
		slack.OptionLog(log.New(io.Discard, "", 0)))
}

func slackErr(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// TestWebAPI drives the fake's Web API with slack-go: auth.test, posting,
// editing, history and replies, the upload flow, the download of
// url_private, and the errors and rate limit in Slack's shapes.
func TestWebAPI(t *testing.T) {
	f, url := newFake(t, slacktest.Options{})
	ctx := t.Context()
	api := client(url, botToken)

	at, err := api.AuthTestContext(ctx)
	if err != nil || at.UserID != "U0BOT" || at.BotID != "B0BOT" || at.TeamID != "T0TEAM" {
		t.Fatalf("auth.test = %+v, %v", at, err)
	}
	for _, tc := range []struct{ token, want string }{
		{"xoxb-unknown-token-1234567890", "invalid_auth"},
		{appToken, "not_allowed_token_type"},
	} {
		if _, err := client(url, tc.token).AuthTestContext(ctx); slackErr(err) != tc.want {
			t.Errorf("auth.test with %s: %v, want %s", tc.token[:5], err, tc.want)
		}
	}

	parent := f.Say(channel, alice, "a question")
	ch, ts, err := api.PostMessageContext(ctx, channel, slack.MsgOptionText("first", false), slack.MsgOptionTS(parent))
	if err != nil || ch != channel || ts == "" {
		t.Fatalf("chat.postMessage = %q %q %v", ch, ts, err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText("first, edited", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, channel, parent, slack.MsgOptionText("not mine", false)); slackErr(err) != "cant_update_message" {
		t.Errorf("editing Alice's message: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C0SECRET", slack.MsgOptionText("x", false)); slackErr(err) != "not_in_channel" {
		t.Errorf("posting where the bot is no member: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, channel, slack.MsgOptionText(strings.Repeat("a", slacktest.MaxTextLen+1), false)); slackErr(err) != "msg_too_long" {
		t.Errorf("posting a long text: %v", err)
	}
	for _, status := range []string{"is thinking…", ""} {
		if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: parent, Status: status}); err != nil {
			t.Fatalf("assistant.threads.setStatus %q: %v", status, err)
		}
	}
	if got := f.Statuses(channel, parent); len(got) != 2 || got[0] != "is thinking…" || got[1] != "" {
		t.Errorf("statuses %q, want the status set, then cleared", got)
	}
	if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: "1.000001", Status: "x"}); slackErr(err) != "invalid_thread_ts" {
		t.Errorf("status of no thread: %v", err)
	}
	sent := f.Sent(channel)
	if len(sent) != 1 || sent[0].Text != "first, edited" || sent[0].ThreadTS != parent || len(sent[0].Edits) != 1 {
		t.Fatalf("sent %+v", sent)
	}

	// History: the thread reply is not in it; replies has parent and reply.
	later := f.Say(channel, alice, "later")
	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: channel, Oldest: parent})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Timestamp != later {
		t.Fatalf("history after %s = %+v, %v", parent, h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: channel, Limit: 1})
	if err != nil || len(h.Messages) != 1 || !h.HasMore || h.ResponseMetaData.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: channel, Limit: 1, Cursor: h.ResponseMetaData.NextCursor})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Timestamp != parent || h.Messages[0].ReplyCount != 1 {
		t.Fatalf("second page = %+v, %v", h, err)
	}
	replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: parent})
	if err != nil || len(replies) != 2 || replies[1].Timestamp != ts {
		t.Fatalf("replies = %+v, %v", replies, err)
	}

	// Upload (getUploadURLExternal, the upload URL, completeUploadExternal).
	data := []byte("%PDF-1.4 a report")
	sum, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "report.pdf", FileSize: len(data),
		Reader: bytes.NewReader(data), Channel: channel, ThreadTimestamp: parent, InitialComment: "here"})
	if err != nil || sum.ID == "" {
		t.Fatalf("upload = %+v, %v", sum, err)
	}
	sent = f.Sent(channel)
	if len(sent) != 2 || len(sent[1].Files) != 1 || !bytes.Equal(sent[1].Files[0].Data, data) || sent[1].Text != "here" || sent[1].ThreadTS != parent {
		t.Fatalf("uploaded message %+v", sent)
	}

	// A person's file, downloaded from url_private with the bot token.
	fileTS := f.SayWith(dm, alice, "see this", slacktest.SayOptions{Files: []slacktest.File{{Name: "cat.png", MimeType: "image/png", Data: []byte("png bytes")}}})
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: dm})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Timestamp != fileTS || len(h.Messages[0].Files) != 1 {
		t.Fatalf("DM history = %+v, %v", h, err)
	}
	var got bytes.Buffer
	if err := api.GetFileContext(ctx, h.Messages[0].Files[0].URLPrivate, &got); err != nil || got.String() != "png bytes" {
		t.Fatalf("download = %q, %v", got.String(), err)
	}
	got.Reset()
	if err := client(url, "xoxb-wrong-token-000000000").GetFileContext(ctx, h.Messages[0].Files[0].URLPrivate, &got); err == nil {
		t.Fatalf("download with a wrong token served %q", got.String())
	}

	// Errors and the rate limit.
	f.FailNext("chat.update", "", 7)
	_, _, _, err = api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionText("again", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("rate-limited chat.update: %v", err)
	}
	f.Revoke(botToken)
	if _, err := api.AuthTestContext(ctx); slackErr(err) != "token_revoked" {
		t.Fatalf("auth.test after revoke: %v", err)
	}
}

// events reads the Socket Mode client's events until it sees one of typ,
// acking nothing.
func next(t *testing.T, smc *socketmode.Client, typ socketmode.EventType) socketmode.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-smc.Events:
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

func messageOf(t *testing.T, ev socketmode.Event) *slackevents.MessageEvent {
	t.Helper()
	ea, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		t.Fatalf("event data %T", ev.Data)
	}
	m, ok := ea.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		t.Fatalf("inner event %T", ea.InnerEvent.Data)
	}
	return m
}

// TestSocketMode drives the fake's Socket Mode with slack-go's socketmode
// client: hello, an events_api envelope acked by envelope_id, an unacked
// one sent again with retry_attempt, a disconnect the client reconnects
// after, a mention, and a revoked app token ending Run.
func TestSocketMode(t *testing.T) {
	f, url := newFake(t, slacktest.Options{AckTimeout: 300 * time.Millisecond})
	smc := socketmode.New(client(url, botToken), socketmode.OptionLog(log.New(io.Discard, "", 0)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- smc.RunContext(ctx) }()

	next(t, smc, socketmode.EventTypeConnected)
	next(t, smc, socketmode.EventTypeHello)
	ts := f.Say(dm, alice, "hello bot")
	ev := next(t, smc, socketmode.EventTypeEventsAPI)
	if m := messageOf(t, ev); m.Text != "hello bot" || m.TimeStamp != ts || m.Channel != dm || !m.IsIM() || m.User != alice {
		t.Fatalf("message event %+v", m)
	}
	if err := smc.Ack(*ev.Request); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := f.WaitStats(wctx, appToken, func(s slacktest.SocketStats) bool { return s.Acks == 1 && s.Pending == 0 }); err != nil {
		t.Fatal(err)
	}

	// Not acked: sent again with retry_attempt 1.
	f.Say(dm, alice, "are you there")
	first := next(t, smc, socketmode.EventTypeEventsAPI)
	again := next(t, smc, socketmode.EventTypeEventsAPI)
	if again.Request.EnvelopeID != first.Request.EnvelopeID || again.Request.RetryAttempt != 1 || again.Request.RetryReason != "timeout" {
		t.Fatalf("retry %+v after %+v", again.Request, first.Request)
	}
	smc.Ack(*again.Request)

	// Disconnect: the client opens a new connection.
	f.Disconnect(appToken, time.Second)
	next(t, smc, socketmode.EventTypeConnected)
	if _, err := f.WaitStats(wctx, appToken, func(s slacktest.SocketStats) bool { return s.Opened == 2 && s.Connections == 1 }); err != nil {
		t.Fatal(err)
	}
	// A mention in a channel: a message event and an app_mention.
	f.Say(channel, alice, "<@U0BOT> help")
	var kinds []string
	for range 2 {
		ev := next(t, smc, socketmode.EventTypeEventsAPI)
		kinds = append(kinds, ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Type)
		smc.Ack(*ev.Request)
	}
	if strings.Join(kinds, ",") != "message,app_mention" {
		t.Fatalf("events %v", kinds)
	}
	// The bot's own post comes back as a message event with its bot_id.
	if _, _, err := client(url, botToken).PostMessageContext(ctx, dm, slack.MsgOptionText("from the bot", false)); err != nil {
		t.Fatal(err)
	}
	if m := messageOf(t, next(t, smc, socketmode.EventTypeEventsAPI)); m.BotID != "B0BOT" {
		t.Fatalf("bot message event %+v", m)
	}

	// A revoked app token: the client cannot reconnect and Run ends.
	f.Revoke(appToken)
	go func() {
		for {
			select {
			case <-smc.Events:
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case err := <-runErr:
		if err == nil || err.Error() != "token_revoked" {
			t.Fatalf("Run = %v, want token_revoked", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end after the app token was revoked")
	}
}
