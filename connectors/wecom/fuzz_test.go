package wecom

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"testing"
)

// FuzzAppMessage: whatever a (decrypted) callback carries, decoding it and
// turning it into text never panics; a text message's text is its Content.
func FuzzAppMessage(f *testing.F) {
	f.Add([]byte(`<xml><ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName><FromUserName><![CDATA[mycreate]]></FromUserName><CreateTime>1409659813</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hello]]></Content><MsgId>4561255354251345929</MsgId><AgentID>218</AgentID></xml>`))
	f.Add([]byte(`<xml><MsgType>location</MsgType><Location_X>23.1</Location_X><Location_Y>113.3</Location_Y><Label>x</Label></xml>`))
	f.Add([]byte(`<xml><MsgType>link</MsgType><Title>t</Title><Url>u</Url></xml>`))
	f.Add([]byte(`<xml><MsgType>event</MsgType><Event>enter_agent</Event></xml>`))
	c := &Connector{}
	f.Fuzz(func(t *testing.T, plain []byte) {
		var m appMessage
		if xml.Unmarshal(plain, &m) != nil {
			return
		}
		m.MediaID = "" // no download in a fuzz run
		text, files, err := c.appContent(context.Background(), binding{}, &m)
		if err != nil || len(files) != 0 {
			t.Fatalf("appContent: %q %d %v", text, len(files), err)
		}
		if m.MsgType == "text" && text != m.Content {
			t.Fatalf("text %q, content %q", text, m.Content)
		}
	})
}

// FuzzBotFrame: whatever a robot's connection carries, decoding a frame
// and its message never panics; a text message's text is its content.
func FuzzBotFrame(f *testing.F) {
	f.Add([]byte(`{"cmd":"aibot_msg_callback","headers":{"req_id":"r"},"body":{"msgid":"m","chattype":"single","from":{"userid":"u"},"msgtype":"text","text":{"content":"hi"}}}`))
	f.Add([]byte(`{"cmd":"aibot_msg_callback","headers":{"req_id":"r"},"body":{"msgid":"m","msgtype":"mixed","mixed":{"msg_item":[{"msgtype":"text","text":{"content":"a"}},{"msgtype":"image","image":{"url":"","aeskey":"k"}}]}}}`))
	f.Add([]byte(`{"headers":{"req_id":"aibot_subscribe_1"},"errcode":0,"errmsg":"ok"}`))
	c := &Connector{}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fr frame
		if json.Unmarshal(data, &fr) != nil {
			return
		}
		var m botMessage
		if json.Unmarshal(fr.Body, &m) != nil {
			return
		}
		// No download in a fuzz run.
		m.Image.URL, m.File.URL, m.Video.URL = "", "", ""
		for i := range m.Mixed.Items {
			m.Mixed.Items[i].Image.URL = ""
		}
		text, files := c.botContent(context.Background(), &m)
		if len(files) != 0 {
			t.Fatalf("files from %s", data)
		}
		if m.MsgType == "text" && text != m.Text.Content {
			t.Fatalf("text %q, content %q", text, m.Text.Content)
		}
	})
}
