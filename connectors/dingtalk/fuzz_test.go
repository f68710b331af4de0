package dingtalk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzStreamFrame: whatever the Stream connection carries, decoding a
// frame never panics, and its kind agrees with its type and topic: only a
// CALLBACK on the bot message topic is published, only a SYSTEM ping is
// echoed, only a SYSTEM disconnect ends the connection.
func FuzzStreamFrame(f *testing.F) {
	f.Add([]byte(`{"specVersion":"1.0","type":"SYSTEM","headers":{"contentType":"application/json","messageId":"m1","time":"1690362102194","topic":"ping"},"data":"{\"opaque\":\"2ab3\"}"}`))
	f.Add([]byte(`{"specVersion":"1.0","type":"SYSTEM","headers":{"messageId":"m2","topic":"disconnect"},"data":"{\"reason\":\"expired\"}"}`))
	f.Add([]byte(`{"specVersion":"1.0","type":"CALLBACK","headers":{"appId":"a","messageId":"m3","topic":"/v1.0/im/bot/messages/get"},"data":"{\"msgId\":\"x\"}"}`))
	f.Add([]byte(`{"type":"EVENT","headers":{"topic":"*","eventType":"chat_update_title"},"data":"{}"}`))
	f.Add([]byte(`{"type":"CALLBACK","headers":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, kind := decodeFrame(data)
		if kind == frameBad {
			return
		}
		topic := fr.Headers["topic"]
		want := frameOther
		switch {
		case fr.Type == typeSystem && topic == "ping":
			want = framePing
		case fr.Type == typeSystem && topic == "disconnect":
			want = frameDisconnect
		case fr.Type == typeCallback && topic == topicBotMessage:
			want = frameBotMessage
		}
		if kind != want {
			t.Fatalf("kind %d, want %d for %s", kind, want, data)
		}
	})
}

// FuzzBotMessage: whatever a bot message push carries, decoding it and
// turning it into text never panics nor downloads without a code; a text
// message's text is its trimmed content.
func FuzzBotMessage(f *testing.F) {
	f.Add([]byte(`{"conversationId":"cid1","conversationType":"1","msgId":"m","msgtype":"text","senderStaffId":"alice","text":{"content":" hi "}}`))
	f.Add([]byte(`{"conversationId":"cid2","conversationType":"2","msgId":"m","msgtype":"richText","content":{"richText":[{"text":"a"},{"type":"picture","downloadCode":""}]}}`))
	f.Add([]byte(`{"msgId":"m","msgtype":"audio","content":{"recognition":"call me","duration":3000}}`))
	f.Add([]byte(`{"msgId":"m","msgtype":"file","content":{"fileName":"a.pdf"}}`))
	f.Add([]byte(`{"msgId":"m","msgtype":"interactiveCard","content":[1,2]}`))
	c := &Connector{}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m botMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if hasDownloadCode(m.Content) {
			return // no download in a fuzz run
		}
		text, files, err := c.content(context.Background(), cred{}, &m)
		if err != nil || len(files) != 0 {
			t.Fatalf("content: %q %d %v", text, len(files), err)
		}
		if (m.MsgType == "text" || m.MsgType == "") && text != strings.TrimSpace(m.Text.Content) {
			t.Fatalf("text %q, content %q", text, m.Text.Content)
		}
	})
}

// hasDownloadCode reports a content with a non-empty downloadCode
// anywhere.
func hasDownloadCode(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "downloadCode" && s != "" {
					return true
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
