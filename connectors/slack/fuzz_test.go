package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// Socket Mode frames as Slack sends them
// (https://api.slack.com/apis/socket-mode): a hello, a disconnect, and
// events_api envelopes of message and app_mention events, including a file
// share, a thread reply, a bot's own message and an edit.
var frameSeeds = []string{
	`{"type":"hello","num_connections":1,"debug_info":{"host":"applink-1","approximate_connection_time":18060},"connection_info":{"app_id":"A0TESTAPP1"}}`,
	`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"applink-1"}}`,
	`{"envelope_id":"57d6a792-4d35-4d0b-b6aa-3361493e1caf","type":"events_api","accepts_response_payload":false,"retry_attempt":0,"retry_reason":"",` +
		`"payload":{"token":"v","team_id":"T0ACME0001","api_app_id":"A0TESTAPP1","type":"event_callback","event_id":"Ev01","event_time":1700000000,` +
		`"event":{"type":"message","channel":"C0GENERAL1","user":"U0ALICE001","text":"hi &lt;b&gt; &amp; <@U0BOTUSER1>","ts":"1700000000.000100","event_ts":"1700000000.000100","channel_type":"channel"}}}`,
	`{"envelope_id":"e2","type":"events_api","accepts_response_payload":false,"retry_attempt":2,"retry_reason":"timeout",` +
		`"payload":{"type":"event_callback","event":{"type":"app_mention","channel":"C0RANDOM01","user":"U0ALICE001","text":"<@U0BOTUSER1> hello","ts":"1700000001.000200","thread_ts":"1700000000.000100","event_ts":"1700000001.000200"}}}`,
	`{"envelope_id":"e3","type":"events_api","payload":{"type":"event_callback","event":{"type":"message","subtype":"file_share","channel":"D0ALICE001","channel_type":"im","user":"U0ALICE001","text":"",` +
		`"ts":"1700000002.000300","files":[{"id":"F1","name":"a.png","mimetype":"image/png","size":12,"mode":"hosted","url_private":"https://files.slack.com/files-pri/T1-F1/a.png","url_private_download":"https://files.slack.com/files-pri/T1-F1/download/a.png"}]}}}`,
	`{"envelope_id":"e4","type":"events_api","payload":{"type":"event_callback","event":{"type":"message","channel":"C0GENERAL1","channel_type":"channel","bot_id":"B0BOT00001","user":"U0BOTUSER1","text":"You said: hi","ts":"1700000003.000400"}}}`,
	`{"envelope_id":"e5","type":"events_api","payload":{"type":"event_callback","event":{"type":"message","subtype":"message_changed","channel":"C0GENERAL1","channel_type":"channel","ts":"1700000004.000500",` +
		`"message":{"type":"message","user":"U0ALICE001","text":"edited","ts":"1700000000.000100","edited":{"user":"U0ALICE001","ts":"1700000004.000000"}},"previous_message":{"type":"message","user":"U0ALICE001","text":"hi","ts":"1700000000.000100"}}}}`,
	`{"envelope_id":"e6","type":"events_api","payload":{"type":"event_callback","event":{"type":"reaction_added","user":"U0ALICE001","reaction":"thumbsup","item":{"type":"message","channel":"C0GENERAL1","ts":"1700000000.000100"}}}}`,
}

// FuzzSocketModeFrame decodes a Socket Mode frame as slack-go's socketmode
// client does (its Request, then slackevents.ParseEvent of an events_api
// payload) and reads it as the connector does: never a panic; a message
// read from it has a conversation and a ts as its id, is publishable only
// when a person (not a bot) wrote it, and the serving rules, the ts order
// and the text unescaping hold on whatever it carries.
func FuzzSocketModeFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	bound := binding{Channel: general, BotUserID: botUser, Since: "1600000000.000000"}
	unbound := binding{BotUserID: botUser, Since: "1600000000.000000"}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var req socketmode.Request
		if json.Unmarshal(frame, &req) != nil || req.Type != socketmode.RequestTypeEventsAPI {
			return
		}
		ea, err := slackevents.ParseEvent(req.Payload, slackevents.OptionNoVerifyToken())
		if err != nil {
			return
		}
		in, ok := incomingOf(ea)
		if !ok {
			return
		}
		if in.id() != "slack-"+in.Channel+"-"+in.TS {
			t.Fatalf("id %q", in.id())
		}
		if in.publishable() && (in.BotID != "" || in.User == "" || in.TS == "") {
			t.Fatalf("publishable: %+v", in)
		}
		if bound.wants(&in) && in.Channel != general {
			t.Fatalf("the channel bound to %s wants a message of %s", general, in.Channel)
		}
		if unbound.wants(&in) && in.User == botUser {
			t.Fatal("a channel wants its own bot's message")
		}
		_ = tsTime(in.TS)
		if tsLess(in.TS, in.TS) {
			t.Fatalf("ts %q before itself", in.TS)
		}
		if u := unescape(in.Text); utf8.ValidString(in.Text) && !utf8.ValidString(u) {
			t.Fatalf("unescape made %q invalid UTF-8", in.Text)
		}
	})
}

// FuzzHistory decodes a conversations.history answer as slack-go does and
// reads its messages as the catch-up does: never a panic; a thread's
// parent is no reply of itself, and a DM's messages are DM messages.
func FuzzHistory(f *testing.F) {
	f.Add([]byte(`{"ok":true,"messages":[{"type":"message","user":"U0ALICE001","text":"hi","ts":"1700000000.000100"},`+
		`{"type":"message","user":"U0ALICE001","text":"parent","ts":"1700000000.000050","thread_ts":"1700000000.000050","reply_count":2,"latest_reply":"1700000009.000000"},`+
		`{"type":"message","subtype":"file_share","user":"U0ALICE001","text":"","ts":"1700000001.000000","files":[{"id":"F1","name":"a.txt","url_private":"https://files.slack.com/x"}]}],`+
		`"has_more":true,"response_metadata":{"next_cursor":"bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz"}}`), "C0GENERAL1")
	f.Add([]byte(`{"ok":false,"error":"not_in_channel"}`), "D0ALICE001")
	f.Fuzz(func(t *testing.T, body []byte, conv string) {
		var res slackapi.GetConversationHistoryResponse
		if json.Unmarshal(body, &res) != nil {
			return
		}
		for _, m := range res.Messages {
			in := fromHistory(conv, m.Msg)
			if in.ThreadTS != "" && in.ThreadTS == in.TS {
				t.Fatalf("a thread's parent read as its own reply: %+v", in)
			}
			if strings.HasPrefix(conv, "D") != (in.ChannelType == "im") {
				t.Fatalf("conversation %q read as channel type %q", conv, in.ChannelType)
			}
			if in.id() != "slack-"+conv+"-"+m.Timestamp {
				t.Fatalf("id %q", in.id())
			}
		}
	})
}

// FuzzTS checks the order of Slack timestamps: irreflexive, asymmetric,
// and the same as the order of their times for timestamps tsOf writes.
func FuzzTS(f *testing.F) {
	f.Add("1700000000.000100", "1700000000.0001")
	f.Add("1700000000.1", "1700000000.000100")
	f.Add("", "x.y")
	f.Add("-1.5", "9223372036854775807.999999")
	f.Fuzz(func(t *testing.T, a, b string) {
		if tsLess(a, a) {
			t.Fatalf("%q before itself", a)
		}
		if tsLess(a, b) && tsLess(b, a) {
			t.Fatalf("%q and %q each before the other", a, b)
		}
		ta, tb := tsTime(a), tsTime(b)
		if !plausible(ta) || !plausible(tb) {
			return // Slack's ts are seconds since 1970 in ten or eleven digits
		}
		if ra, rb := tsOf(ta), tsOf(tb); tsLess(ra, rb) != ta.Before(tb) {
			t.Fatalf("%q < %q is %v, but %v < %v is %v", ra, rb, tsLess(ra, rb), ta, tb, ta.Before(tb))
		}
	})
}

// plausible reports a time a Slack ts can have: after 1970, before 5138.
func plausible(t time.Time) bool { return t.Unix() >= 0 && t.Unix() < 1e11 }

// FuzzEscape checks that Slack's escaping of a posted text is undone by
// the unescaping of a received one, and leaves no "<" or ">" that Slack
// would read as a mention or a link.
func FuzzEscape(f *testing.F) {
	f.Add("if a < b && b > c <!channel> &amp;")
	f.Add("<@U0BOTUSER1> &lt;")
	f.Fuzz(func(t *testing.T, s string) {
		e := escape(s)
		if strings.ContainsAny(e, "<>") {
			t.Fatalf("escape(%q) = %q", s, e)
		}
		if u := unescape(e); u != s {
			t.Fatalf("unescape(escape(%q)) = %q", s, u)
		}
	})
}
