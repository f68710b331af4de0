package protocol

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestValidatePayloadRules(t *testing.T) {
	descBytes, err := os.ReadFile("testdata/spec_descriptor.json")
	if err != nil {
		t.Fatal(err)
	}
	desc := string(descBytes)
	const ch = "cch_conn_im_wechat_xxx" // the channel of the spec Descriptor
	badDesc := strings.Replace(desc, `"status": "connected"`, `"status": "online"`, 1)
	long := strings.Repeat("é", 129) // 258 bytes
	type tc struct {
		name    string
		typ     string
		payload string
		d       Direction
		want    string
	}
	tests := []tc{
		// connector.hello
		{"hello ok", TypeHello, `{"connector_card_id":"im.wechat","protocol_version":"3.0","supported_profiles":["xagent.im.v2"]}`, ToConnector, ""},
		{"hello no card id", TypeHello, `{"protocol_version":"3.0","supported_profiles":["xagent.im.v2"]}`, ToConnector, "payload.connector_card_id"},
		{"hello no version", TypeHello, `{"connector_card_id":"a","supported_profiles":["xagent.im.v2"]}`, ToConnector, "payload.protocol_version"},
		{"hello bad version", TypeHello, `{"connector_card_id":"a","protocol_version":"three","supported_profiles":["p"]}`, ToConnector, "payload.protocol_version"},
		{"hello no profiles", TypeHello, `{"connector_card_id":"a","protocol_version":"3.0","supported_profiles":[]}`, ToConnector, "payload.supported_profiles"},
		{"hello blank profile", TypeHello, `{"connector_card_id":"a","protocol_version":"3.0","supported_profiles":[""]}`, ToConnector, "payload.supported_profiles[0]"},
		{"hello toward host", TypeHello, `{"connector_card_id":"a","protocol_version":"3.0","supported_profiles":["p"]}`, ToHost, "type"},
		// connector.hello.ack
		{"hello.ack ok", TypeHelloAck, `{"connector_card_id":"a","connector_id":"c","protocol_version":"3.0"}`, ToHost, ""},
		{"hello.ack no card id", TypeHelloAck, `{"connector_id":"c","protocol_version":"3.0"}`, ToHost, "payload.connector_card_id"},
		{"hello.ack no connector id", TypeHelloAck, `{"connector_card_id":"a","protocol_version":"3.0"}`, ToHost, "payload.connector_id"},
		{"hello.ack no version", TypeHelloAck, `{"connector_card_id":"a","connector_id":"c"}`, ToHost, "payload.protocol_version"},
		// channel.open.ack
		{"open.ack ok", TypeChannelOpenAck, `{"connector_channel_id":"` + ch + `","connection_descriptor":` + desc + `}`, ToHost, ""},
		{"open.ack no channel", TypeChannelOpenAck, `{"connection_descriptor":` + desc + `}`, ToHost, "payload.connector_channel_id"},
		{"open.ack channel differs", TypeChannelOpenAck, `{"connector_channel_id":"other","connection_descriptor":` + desc + `}`, ToHost, "payload.connector_channel_id"},
		{"open.ack no descriptor", TypeChannelOpenAck, `{"connector_channel_id":"` + ch + `"}`, ToHost, "payload.connection_descriptor"},
		{"open.ack bad descriptor", TypeChannelOpenAck, `{"connector_channel_id":"` + ch + `","connection_descriptor":` + badDesc + `}`, ToHost, "payload.connection_descriptor.connection.status"},
		// auth.*
		{"auth.start ok", TypeAuthStart, `{"flow_id":"wechat_qr_login"}`, ToConnector, ""},
		{"auth.start no flow", TypeAuthStart, `{"input":{"a":"b"}}`, ToConnector, "payload.flow_id"},
		{"auth.start.ack pending", TypeAuthStartAck, `{"status":"pending","auth_session_id":"a"}`, ToHost, ""},
		{"auth.start.ack unauthenticated", TypeAuthStartAck, `{"status":"unauthenticated"}`, ToHost, "payload.status"},
		{"auth.start.ack authenticated", TypeAuthStartAck, `{"status":"authenticated","connection_descriptor":` + desc + `}`, ToHost, ""},
		{"auth.start.ack authenticated no descriptor", TypeAuthStartAck, `{"status":"authenticated"}`, ToHost, "payload.connection_descriptor"},
		{"auth.status ok", TypeAuthStatus, `{"auth_session_id":"a","refresh":true}`, ToConnector, ""},
		{"auth.status no session", TypeAuthStatus, `{"flow_id":"f"}`, ToConnector, "payload.auth_session_id"},
		{"auth.status.ack unauthenticated", TypeAuthStatusAck, `{"status":"unauthenticated"}`, ToHost, ""},
		{"auth.status.ack bad", TypeAuthStatusAck, `{"status":"done"}`, ToHost, "payload.status"},
		{"auth.cancel ok", TypeAuthCancel, `{"auth_session_id":"a"}`, ToConnector, ""},
		{"auth.cancel no session", TypeAuthCancel, `{}`, ToConnector, "payload.auth_session_id"},
		{"auth.cancel.ack ok", TypeAuthCancelAck, `{"status":"canceled","auth_status":"unauthenticated"}`, ToHost, ""},
		{"auth.cancel.ack bad status", TypeAuthCancelAck, `{"status":"cancelled"}`, ToHost, "payload.status"},
		{"auth.cancel.ack bad auth_status", TypeAuthCancelAck, `{"status":"ignored","auth_status":"x"}`, ToHost, "payload.auth_status"},
		// descriptor packets
		{"descriptor.push ok", TypeDescriptorPush, `{"connection_descriptor":` + desc + `}`, ToHost, ""},
		{"descriptor.get.ack missing", TypeDescriptorGetAck, `{}`, ToHost, "payload.connection_descriptor"},
		// tool.*
		{"tool.invoke ok", TypeToolInvoke, `{"tool_id":"t","arguments":{"connector_channel_id":"c"}}`, ToConnector, ""},
		{"tool.invoke no tool", TypeToolInvoke, `{"arguments":{}}`, ToConnector, "payload.tool_id"},
		{"tool.invoke no arguments", TypeToolInvoke, `{"tool_id":"t"}`, ToConnector, "payload.arguments"},
		{"tool.invoke arguments array", TypeToolInvoke, `{"tool_id":"t","arguments":[]}`, ToConnector, "payload.arguments"},
		{"tool.invoke.ack ok", TypeToolInvokeAck, `{"tool_id":"t","result":{"status":"sent"}}`, ToHost, ""},
		{"tool.invoke.ack no tool", TypeToolInvokeAck, `{"result":{}}`, ToHost, "payload.tool_id"},
		{"tool.progress ok", TypeToolProgressPush, `{"tool_id":"t","progress":0.5}`, ToHost, ""},
		{"tool.progress no tool", TypeToolProgressPush, `{"progress":0.5}`, ToHost, "payload.tool_id"},
		// message.push (IM v1)
		{"message.push ok", TypeMessagePush, `{"provider":"wechat","profile":"xagent.im.v1","event_kind":"im.message.received","message_id":"m","sender_id":"s","message_type":"text","raw_text":"","text":"hi"}`, ToHost, ""},
		{"message.push wrong profile", TypeMessagePush, `{"provider":"wechat","profile":"xagent.im.v2","event_kind":"e","message_id":"m","sender_id":"s","message_type":"text","raw_text":"","text":"hi"}`, ToHost, "payload.profile"},
		{"message.push no raw_text", TypeMessagePush, `{"provider":"wechat","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"text","text":"hi"}`, ToHost, "payload.raw_text"},
		{"message.push no sender", TypeMessagePush, `{"provider":"wechat","profile":"xagent.im.v1","event_kind":"e","message_id":"m","message_type":"text","raw_text":"","text":"hi"}`, ToHost, "payload.sender_id"},
		{"message.push no content", TypeMessagePush, `{"provider":"wechat","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"text","raw_text":""}`, ToHost, "payload.text"},
		{"message.push two session refs", TypeMessagePush, `{"provider":"w","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"text","raw_text":"","content":"c","session_ref":"a","target_session_id":"b"}`, ToHost, "payload"},
		{"message.push file with url", TypeMessagePush, `{"provider":"w","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"file","raw_text":"","text":"c","files":[{"file_ref":"f","url":"https://cdn.example/f?sig=1"}]}`, ToHost, ""},
		{"message.push file with a bad url", TypeMessagePush, `{"provider":"w","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"file","raw_text":"","text":"c","files":[{"file_ref":"f","url":"ftp://cdn.example/f"}]}`, ToHost, "payload.files[0].url"},
		{"message.push file without ref", TypeMessagePush, `{"provider":"w","profile":"xagent.im.v1","event_kind":"e","message_id":"m","sender_id":"s","message_type":"file","raw_text":"","message":"c","files":[{"type":"file"}]}`, ToHost, "payload.files[0].file_ref"},
		// chat.message
		{"chat text only", TypeChatMessage, `{"message_id":"m","text":"hi"}`, ToConnector, ""},
		{"chat no message_id", TypeChatMessage, `{"text":"hi"}`, ToConnector, "payload.message_id"},
		{"chat empty", TypeChatMessage, `{"message_id":"m","text":"","files":[]}`, ToConnector, "payload"},
		{"chat file only outbound", TypeChatMessage, `{"message_id":"m","files":[{"type":"image","file_ref":"f1"}]}`, ToConnector, ""},
		{"chat file type missing", TypeChatMessage, `{"message_id":"m","files":[{"file_ref":"f1"}]}`, ToConnector, "payload.files[0].type"},
		{"chat file type bad", TypeChatMessage, `{"message_id":"m","files":[{"type":"doc","file_ref":"f1"}]}`, ToConnector, "payload.files[0].type"},
		{"chat file_ref missing", TypeChatMessage, `{"message_id":"m","files":[{"type":"file"}]}`, ToConnector, "payload.files[0].file_ref"},
		{"chat file_ref duplicate", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f"},{"type":"audio","file_ref":"f"}]}`, ToConnector, "payload.files[1].file_ref"},
		{"chat inbound relative url", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f","download_url":"/files/refs/f"}]}`, ToHost, ""},
		{"chat inbound absolute url", TypeChatMessage, `{"message_id":"m","files":[{"type":"video","file_ref":"f","download_url":"https://c.example/files/refs/f?sig=1"}]}`, ToHost, ""},
		{"chat inbound no url", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f"}]}`, ToHost, "payload.files[0].download_url"},
		{"chat url ftp", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f","download_url":"ftp://h/f"}]}`, ToHost, "payload.files[0].download_url"},
		{"chat url no host", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f","download_url":"https:///f"}]}`, ToHost, "payload.files[0].download_url"},
		{"chat url protocol-relative", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f","download_url":"//h/f"}]}`, ToHost, "payload.files[0].download_url"},
		{"chat forbidden session_id", TypeChatMessage, `{"message_id":"m","text":"x","session_id":"s"}`, ToHost, "payload.session_id"},
		{"chat forbidden role", TypeChatMessage, `{"message_id":"m","text":"x","role":"user"}`, ToConnector, "payload.role"},
		{"chat forbidden user_id in file", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f","user_id":"u"}]}`, ToConnector, "payload.files[0].user_id"},
		{"chat extension ok", TypeChatMessage, `{"message_id":"m","text":"x","created_at":1,"vendor":{"a":1}}`, ToHost, ""},
		// chat.message.delta
		{"delta ok", TypeChatMessageDelta, `{"message_id":"m","sequence":1,"text":"he"}`, ToConnector, ""},
		{"delta sequence 0", TypeChatMessageDelta, `{"message_id":"m","sequence":0,"text":"he"}`, ToConnector, "payload.sequence"},
		{"delta sequence missing", TypeChatMessageDelta, `{"message_id":"m","text":"he"}`, ToConnector, "payload.sequence"},
		{"delta no message_id", TypeChatMessageDelta, `{"sequence":2,"text":"he"}`, ToConnector, "payload.message_id"},
		{"delta with files", TypeChatMessageDelta, `{"message_id":"m","sequence":1,"text":"x","files":[]}`, ToConnector, "payload.files"},
		{"delta toward host", TypeChatMessageDelta, `{"message_id":"m","sequence":1,"text":"x"}`, ToHost, "type"},
		{"delta connector_id", TypeChatMessageDelta, `{"message_id":"m","sequence":1,"text":"x","connector_id":"c"}`, ToConnector, "payload.connector_id"},
		// chat.message.ack
		{"ack accepted", TypeChatMessageAck, `{"message_id":"m","status":"accepted"}`, ToHost, ""},
		{"ack duplicate", TypeChatMessageAck, `{"message_id":"m","status":"duplicate"}`, ToConnector, ""},
		{"ack status bad", TypeChatMessageAck, `{"message_id":"m","status":"ok"}`, ToHost, "payload.status"},
		{"ack no message_id", TypeChatMessageAck, `{"status":"accepted"}`, ToHost, "payload.message_id"},
		{"ack rejected ok", TypeChatMessageAck, `{"message_id":"m","status":"rejected","code":"c","retryable":false}`, ToHost, ""},
		{"ack rejected no code", TypeChatMessageAck, `{"message_id":"m","status":"rejected","retryable":false}`, ToHost, "payload.code"},
		{"ack rejected no retryable", TypeChatMessageAck, `{"message_id":"m","status":"rejected","code":"c"}`, ToHost, "payload.retryable"},
		{"ack rejected retryable null", TypeChatMessageAck, `{"message_id":"m","status":"rejected","code":"c","retryable":null}`, ToHost, "payload.retryable"},
		{"ack rejected retryable string", TypeChatMessageAck, `{"message_id":"m","status":"rejected","code":"c","retryable":"no"}`, ToHost, "payload"},
		{"ack user_connector_id", TypeChatMessageAck, `{"message_id":"m","status":"accepted","user_connector_id":"u"}`, ToHost, "payload.user_connector_id"},
		// chat.activity
		{"activity thinking", TypeChatActivity, `{"status":"thinking"}`, ToConnector, ""},
		{"activity tool", TypeChatActivity, `{"status":"tool","tool_name":"search"}`, ToConnector, ""},
		{"activity tool 256 bytes", TypeChatActivity, `{"status":"tool","tool_name":"` + strings.Repeat("a", 256) + `"}`, ToConnector, ""},
		{"activity tool too long", TypeChatActivity, `{"status":"tool","tool_name":"` + long + `"}`, ToConnector, "payload.tool_name"},
		{"activity tool without name", TypeChatActivity, `{"status":"tool"}`, ToConnector, "payload.tool_name"},
		{"activity idle with name", TypeChatActivity, `{"status":"idle","tool_name":"x"}`, ToConnector, "payload.tool_name"},
		{"activity thinking with empty name", TypeChatActivity, `{"status":"thinking","tool_name":""}`, ToConnector, "payload.tool_name"},
		{"activity bad status", TypeChatActivity, `{"status":"typing"}`, ToConnector, "payload.status"},
		{"activity toward host", TypeChatActivity, `{"status":"idle"}`, ToHost, "type"},
		// generic
		{"unknown type any object", "vendor.thing", `{"session_id":"s"}`, ToHost, ""},
		{"payload not object", TypeAuthStart, `[]`, ToConnector, "payload"},
		{"payload type mismatch", TypeAuthStart, `{"flow_id":1}`, ToConnector, "payload"},
		{"direction unknown skips download_url", TypeChatMessage, `{"message_id":"m","files":[{"type":"file","file_ref":"f"}]}`, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := vEnv(tc.typ, ch, "req_1", "pkt_0", tc.payload)
			vs := ValidatePayload(e, tc.d)
			if tc.want == "" && len(vs) > 0 {
				t.Fatalf("want valid, got %v", vs)
			}
			if tc.want != "" && !vHasPath(vs, tc.want) {
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
			checkDecodedSame(t, e, tc.d, vs)
			data, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			_, pvs := ValidatePacketJSON(data, tc.d)
			if tc.want == "" && len(pvs) > 0 {
				t.Fatalf("packet: want valid, got %v", pvs)
			}
			if len(pvs) == 0 {
				if svs := ValidateSchema(SchemaPacket, data); len(svs) > 0 {
					t.Fatalf("accepted but schema rejects: %v", svs)
				}
			}
		})
	}
}

func TestValidatePayloadAckWithError(t *testing.T) {
	e := vEnv(TypeToolInvokeAck, "cch_1", "req_1", "pkt_0", "")
	e.Error = &ErrorBody{Code: string(CodeToolInvokeFailed), Message: "message text required"}
	if vs := ValidatePayload(e, ToHost); len(vs) > 0 {
		t.Fatalf("failure ack: %v", vs)
	}
	e.Error = nil
	if vs := ValidatePayload(e, ToHost); !vHasPath(vs, "payload.tool_id") {
		t.Fatalf("success ack without payload: %v", vs)
	}
	if vs := ValidatePayload(nil, ToHost); len(vs) != 1 {
		t.Fatalf("nil: %v", vs)
	}
}

// checkDecodedSame checks that ValidateDecodedPayload, given e's payload
// decoded into each payload type it decodes into (its own and others),
// finds exactly the violations vs of ValidatePayload.
func checkDecodedSame(t *testing.T, e *Envelope, d Direction, vs Violations) {
	t.Helper()
	for _, p := range []any{new(ChatMessagePayload), new(ChatAckPayload), new(ChatDeltaPayload),
		new(AuthStartPayload), new(HelloPayload), new(ToolInvokePayload)} {
		if e.DecodePayload(p) != nil {
			continue
		}
		if got := ValidateDecodedPayload(e, d, p); !reflect.DeepEqual(got, vs) {
			t.Fatalf("ValidateDecodedPayload(%T) = %v, ValidatePayload = %v", p, got, vs)
		}
	}
	if got := ValidateDecodedPayload(e, d, nil); !reflect.DeepEqual(got, vs) {
		t.Fatalf("ValidateDecodedPayload(nil) = %v, ValidatePayload = %v", got, vs)
	}
}
