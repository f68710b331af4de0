package slack

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/connectors/slack/slacktest"
)

// pngBytes is a small PNG (its signature and some bytes).
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 600)...)

// echoHost starts the connector against f at api and a host with the echo
// agent signed in with input; it returns the host.
func echoHost(t *testing.T, f *slacktest.Server, api string, input map[string]string, mod func(*Options)) *e2e.Host {
	t.Helper()
	cn := startConn(t, t.TempDir(), api, mod)
	h := e2e.StartHost(t, e2e.HostOptions{Secrets: append(e2e.Secrets{testKey}, secrets...)})
	uc, err := h.SignIn(t.Context(), "alice", h.AdmitConnector(cn.URL, testKey), e2e.SignIn{Flow: FlowApp, Input: input})
	if err != nil {
		t.Fatalf("sign-in: %+v, %v", uc, err)
	}
	waitStats(t, f, "a Socket Mode connection", func(s slacktest.SocketStats) bool { return s.Connections == 1 })
	return h
}

// answered reports whether sent holds a message with text want.
func answered(want string) func([]slacktest.Message) bool {
	return func(sent []slacktest.Message) bool { return slices.Contains(texts(sent), want) }
}

// find returns the sent message with text, failing the test without one.
func find(t *testing.T, sent []slacktest.Message, text string) slacktest.Message {
	t.Helper()
	for _, m := range sent {
		if m.Text == text {
			return m
		}
	}
	t.Fatalf("no message %q in %q", text, texts(sent))
	return slacktest.Message{}
}

// TestThreadsAndFiles: with the echo host on #general, a top-level
// message is answered at the top level and a thread reply in its thread;
// a PNG Alice shares in the thread reaches the agent (downloaded from
// url_private with the bot token) and comes back shared in the same
// thread through files.getUploadURLExternal, the upload and
// files.completeUploadExternal, byte for byte; a file beyond MaxFileBytes
// is announced in the text instead.
func TestThreadsAndFiles(t *testing.T) {
	f, api := newFake(t, nil)
	echoHost(t, f, api, login, func(o *Options) { o.MaxFileBytes = 4096 })

	parent := f.Say(general, alice, "top level")
	top := find(t, waitSent(t, f, general, "the top-level answer", answered("You said: top level")), "You said: top level")
	if top.ThreadTS != "" {
		t.Errorf("top-level answer in thread %q", top.ThreadTS)
	}

	f.SayWith(general, alice, "in the thread", slacktest.SayOptions{ThreadTS: parent})
	in := find(t, waitSent(t, f, general, "the thread answer", answered("You said: in the thread")), "You said: in the thread")
	if in.ThreadTS != parent {
		t.Errorf("thread answer in thread %q, want %q", in.ThreadTS, parent)
	}

	f.SayWith(general, alice, "a picture", slacktest.SayOptions{ThreadTS: parent,
		Files: []slacktest.File{{Name: "chart.png", MimeType: "image/png", Data: pngBytes}}})
	sent := waitSent(t, f, general, "the picture echoed", func(sent []slacktest.Message) bool {
		return slices.ContainsFunc(sent, func(m slacktest.Message) bool { return len(m.Files) == 1 })
	})
	if m := find(t, sent, "You said: a picture"); m.ThreadTS != parent {
		t.Errorf("answer to the picture in thread %q, want %q", m.ThreadTS, parent)
	}
	i := slices.IndexFunc(sent, func(m slacktest.Message) bool { return len(m.Files) == 1 })
	shared := sent[i]
	if got := shared.Files[0]; !bytes.Equal(got.Data, pngBytes) || got.Name != "chart.png" || got.MimeType != "image/png" {
		t.Errorf("shared file %q (%s, %d bytes), want chart.png, image/png, %d bytes", got.Name, got.MimeType, len(got.Data), len(pngBytes))
	}
	if shared.ThreadTS != parent {
		t.Errorf("file shared in thread %q, want %q", shared.ThreadTS, parent)
	}
	if a, b := f.Calls("files.getUploadURLExternal"), f.Calls("files.completeUploadExternal"); a != 1 || b != 1 {
		t.Errorf("getUploadURLExternal %d, completeUploadExternal %d calls; want 1 each", a, b)
	}

	f.Say(general, alice, "after the file") // the file went before this one
	f.SayWith(general, alice, "a big one", slacktest.SayOptions{Files: []slacktest.File{{Name: "big.bin", MimeType: "application/octet-stream", Data: make([]byte, 5000)}}})
	sent = waitSent(t, f, general, "the big file announced", func(sent []slacktest.Message) bool {
		return slices.ContainsFunc(sent, func(m slacktest.Message) bool { return strings.Contains(m.Text, "big.bin") })
	})
	i = slices.IndexFunc(sent, func(m slacktest.Message) bool { return strings.Contains(m.Text, "big.bin") })
	if m := sent[i]; !strings.HasPrefix(m.Text, "You said: a big one") || !strings.Contains(m.Text, "not forwarded: larger than 4096 bytes") || len(m.Files) != 0 {
		t.Errorf("answer %q with %d files; want the text and a note that big.bin was too large", m.Text, len(m.Files))
	}
	if n := f.Calls("files.getUploadURLExternal"); n != 1 {
		t.Errorf("%d uploads, want only the picture's", n)
	}
}

// TestUnbound: a channel signed in without a channel id serves every DM
// and every mention of its bot: a DM is answered in the DM, a mention in
// #random is answered there with the mention taken out of the text, and a
// message in #random that does not mention the bot is not published.
func TestUnbound(t *testing.T) {
	f, api := newFake(t, nil)
	echoHost(t, f, api, loginUnbound, nil)

	f.Say(dmAlice, alice, "hi in private")
	waitSent(t, f, dmAlice, "the DM answered", answered("You said: hi in private"))

	f.Say(random, alice, "nobody asked the bot")
	f.Say(random, alice, "<@"+botUser+"> what time is it?")
	waitSent(t, f, random, "the mention answered", answered("You said: what time is it?"))
	if got := texts(f.Sent(random)); len(got) != 1 {
		t.Errorf("the bot posted %q in #random, want only the mention's answer", got)
	}
	// The mention comes as a message and an app_mention event: published once.
	ctx, cancel := context.WithTimeout(t.Context(), e2e.Wait)
	defer cancel()
	if _, err := f.WaitStats(ctx, appToken, func(s slacktest.SocketStats) bool { return s.Pending == 0 }); err != nil {
		t.Fatal(err)
	}
	if got := texts(f.Sent(random)); len(got) != 1 {
		t.Errorf("after every envelope was acked the bot had posted %q in #random, want one answer", got)
	}
}

// TestStatus: while the echo agent answers a message written in a thread,
// its activity is the bot's status there (assistant.threads.setStatus:
// "is thinking…", then cleared); a top-level message sets none. After
// Slack refuses the status, the connector stops asking for
// StatusRetryAfter, and answers are not affected.
func TestStatus(t *testing.T) {
	f, api := newFake(t, nil)
	echoHost(t, f, api, login, nil)

	f.Say(general, alice, "top level")
	waitSent(t, f, general, "the top-level answer", answered("You said: top level"))
	if n := f.Calls("assistant.threads.setStatus"); n != 0 {
		t.Errorf("%d statuses set for a top-level message", n)
	}

	parent := f.Say(general, alice, "parent")
	waitSent(t, f, general, "the parent answered", answered("You said: parent"))
	f.SayWith(general, alice, "in thread", slacktest.SayOptions{ThreadTS: parent})
	waitSent(t, f, general, "the thread reply answered", answered("You said: in thread"))
	e2e.Eventually(t, "the status cleared", func() bool {
		st := f.Statuses(general, parent)
		return len(st) >= 2 && st[len(st)-1] == ""
	})
	if st := f.Statuses(general, parent); st[0] != "is thinking…" {
		t.Errorf("statuses %q, want \"is thinking…\" first", st)
	}

	f.FailNext("assistant.threads.setStatus", "method_not_supported_for_channel_type", 0)
	f.SayWith(general, alice, "again", slacktest.SayOptions{ThreadTS: parent})
	waitSent(t, f, general, "the second thread reply answered", answered("You said: again"))
	calls := f.Calls("assistant.threads.setStatus")
	f.SayWith(general, alice, "once more", slacktest.SayOptions{ThreadTS: parent})
	waitSent(t, f, general, "the third thread reply answered", answered("You said: once more"))
	if n := f.Calls("assistant.threads.setStatus"); n != calls {
		t.Errorf("%d more statuses asked for after Slack refused one", n-calls)
	}
}
