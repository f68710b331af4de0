package protocol

import (
	"encoding/json"
	"testing"
)

// vEnv builds an envelope of type typ with a payload given as JSON text.
func vEnv(typ, channel, requestID, replyTo, payload string) *Envelope {
	e := &Envelope{Schema: PacketSchema, PacketID: "pkt_1", RequestID: requestID, ReplyTo: replyTo,
		ConnectorChannelID: channel, Type: typ, Time: 1790000000000}
	if payload != "" {
		e.Payload = json.RawMessage(payload)
	}
	return e
}

func TestValidateEnvelopeRules(t *testing.T) {
	tests := []struct {
		name string
		e    *Envelope
		want string
	}{
		{"tool.invoke ok", vEnv(TypeToolInvoke, "cch_1", "req_1", "", `{"tool_id":"t","arguments":{}}`), ""},
		{"schema wrong", func() *Envelope { e := vEnv(TypePing, "", "r", "", ""); e.Schema = "x"; return e }(), "schema"},
		{"packet_id missing", func() *Envelope { e := vEnv(TypePing, "", "r", "", ""); e.PacketID = ""; return e }(), "packet_id"},
		{"type missing", vEnv("", "", "", "", ""), "type"},
		{"time negative", func() *Envelope { e := vEnv(TypePing, "", "r", "", ""); e.Time = -1; return e }(), "time"},
		{"time omitted", func() *Envelope { e := vEnv(TypePing, "", "r", "", ""); e.Time = 0; return e }(), ""},
		{"user-level without channel", vEnv(TypeAuthStart, "", "req_1", "", `{"flow_id":"f"}`), "connector_channel_id"},
		{"first channel.open without channel", vEnv(TypeChannelOpen, "", "req_1", "", ""), ""},
		{"channel.open restoring", vEnv(TypeChannelOpen, "cch_1", "req_1", "", `{}`), ""},
		{"channel.close without channel", vEnv(TypeChannelClose, "", "req_1", "", ""), "connector_channel_id"},
		{"hello is not user-level", vEnv(TypeHello, "", "req_1", "", ""), ""},
		{"chat.message without channel", vEnv(TypeChatMessage, "", "", "", ""), "connector_channel_id"},
		{"request without request_id", vEnv(TypeToolInvoke, "cch_1", "", "", ""), "request_id"},
		{"ack without request_id", vEnv(TypeToolInvokeAck, "cch_1", "", "pkt_0", ""), "request_id"},
		{"ping without request_id", vEnv(TypePing, "", "", "", ""), "request_id"},
		{"push needs no request_id", vEnv(TypeDescriptorPush, "cch_1", "", "", ""), ""},
		{"chat.message needs no request_id", vEnv(TypeChatMessage, "cch_1", "", "", ""), ""},
		{"chat.message.ack without reply_to", vEnv(TypeChatMessageAck, "cch_1", "", "", ""), "reply_to"},
		{"chat.message.ack with reply_to", vEnv(TypeChatMessageAck, "cch_1", "", "pkt_0", ""), ""},
		{"error without code", func() *Envelope {
			e := vEnv(TypeToolInvokeAck, "cch_1", "r", "", "")
			e.Error = &ErrorBody{Message: "x"}
			return e
		}(), "error.code"},
		{"error with code", func() *Envelope {
			e := vEnv(TypeError, "", "", "", "")
			e.Error = &ErrorBody{Code: string(CodeInvalidPacket)}
			return e
		}(), ""},
		{"error packet without error", vEnv(TypeError, "", "", "", ""), "error"},
		{"payload array", vEnv(TypePing, "", "r", "", `[1]`), "payload"},
		{"payload string", vEnv("vendor.x", "", "", "", `"x"`), "payload"},
		{"unknown type ok", vEnv("vendor.x", "", "", "", `{"a":1}`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := ValidateEnvelope(tc.e)
			if tc.want == "" && len(vs) > 0 {
				t.Fatalf("want valid, got %v", vs)
			}
			if tc.want != "" && !vHasPath(vs, tc.want) {
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
			data, err := tc.e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) == 0 {
				if svs := ValidateSchema(SchemaPacket, data); len(svs) > 0 {
					t.Fatalf("accepted but schema rejects: %v", svs)
				}
			}
		})
	}
	if vs := ValidateEnvelope(nil); len(vs) != 1 {
		t.Fatalf("nil: %v", vs)
	}
}

func TestValidatePacketJSON(t *testing.T) {
	tests := []struct {
		name string
		data string
		d    Direction
		want string
		ok   bool // an envelope is returned
	}{
		{"spec error example", `{"schema":"xagent.connector.packet/v1","packet_id":"pkt_error","request_id":"req_123",
			"connector_channel_id":"cch_123","type":"error","time":1790000000000,
			"error":{"code":"channel_not_open","message":"channel.open must complete before auth.start"}}`, ToHost, "", true},
		{"im v2 inbound example", `{ "schema": "xagent.connector.packet/v1", "packet_id": "p-in-7", "connector_channel_id": "cch_42",
			"type": "chat.message", "time": 1790000100000,
			"payload": { "message_id": "tg-9911", "text": "see attached",
			"files": [ { "type": "file", "file_ref": "f_77", "filename": "q3.pdf",
			"mime_type": "application/pdf", "download_url": "/files/refs/f_77" } ],
			"created_at": 1790000099000 } }`, ToHost, "", true},
		{"im v2 ack example", `{ "schema": "xagent.connector.packet/v1", "packet_id": "p-ack-3", "reply_to": "p-out-3",
			"connector_channel_id": "cch_42", "type": "chat.message.ack", "time": 1790000200000,
			"payload": { "message_id": "asst-501", "status": "rejected",
			"code": "target_delivery_failed", "retryable": true, "message": "rate limited" } }`, ToHost, "", true},
		{"not JSON", `{"schema":`, ToHost, "", false},
		{"wrong types", `{"schema":1,"packet_id":"p","type":"ping"}`, ToHost, "", false},
		{"missing packet_id", `{"schema":"xagent.connector.packet/v1","type":"pong","request_id":"r"}`, ToHost, "packet_id", true},
		{"time fractional", `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"pong","request_id":"r","time":1.5}`, ToHost, "", false},
		{"payload null", `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"pong","request_id":"r","payload":null}`, ToHost, "payload", true},
		{"delta toward host", `{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"chat.message.delta",
			"connector_channel_id":"c","payload":{"message_id":"m","sequence":1,"text":"x"}}`, ToHost, "type", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, vs := ValidatePacketJSON([]byte(tc.data), tc.d)
			if (e != nil) != tc.ok {
				t.Fatalf("envelope returned = %v (%v)", e != nil, vs)
			}
			switch {
			case tc.want == "" && tc.ok:
				if len(vs) > 0 {
					t.Fatalf("want valid, got %v", vs)
				}
				if svs := ValidateSchema(SchemaPacket, []byte(tc.data)); len(svs) > 0 {
					t.Fatalf("accepted but schema rejects: %v", svs)
				}
			case tc.want == "":
				if len(vs) == 0 {
					t.Fatal("want violations")
				}
			case !vHasPath(vs, tc.want):
				t.Fatalf("want a violation at %q, got %v", tc.want, vs)
			}
		})
	}
}

// Member names that differ from a declared one only in case are rejected:
// encoding/json would decode them into the declared field.
func TestCaseVariantMembers(t *testing.T) {
	tests := []struct {
		name, path string
		check      func() Violations
	}{
		{"envelope", "Type", func() Violations {
			_, vs := ValidatePacketJSON([]byte(`{"Type":"x","schema":"xagent.connector.packet/v1","packet_id":"p","type":"pong","request_id":"r"}`), ToHost)
			return vs
		}},
		{"error body", "error.CODE", func() Violations {
			_, vs := ValidatePacketJSON([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"error","error":{"CODE":"y","code":"x"}}`), ToHost)
			return vs
		}},
		{"payload", "payload.Tool_Name", func() Violations {
			_, vs := ValidatePacketJSON([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"chat.activity","connector_channel_id":"c","payload":{"status":"idle","Tool_Name":"x"}}`), ToConnector)
			return vs
		}},
		{"card", "connector.NAME", func() Violations {
			c := vSpecCard(t)
			c.Connector.Extensions = Extensions{"NAME": json.RawMessage(`"y"`)}
			return ValidateCard(c)
		}},
		{"descriptor", "connection.Status", func() Violations {
			d := vSpecDescriptor(t)
			d.Connection.Extensions = Extensions{"Status": json.RawMessage(`"x"`)}
			return ValidateDescriptor(d)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if vs := tc.check(); !vHasPath(vs, tc.path) {
				t.Fatalf("want a violation at %q, got %v", tc.path, vs)
			}
		})
	}
}
