package wsconn

import (
	"reflect"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// envelopeCases are frames of every shape: the common ones the fast path
// reads and the unusual ones it leaves to protocol.DecodeEnvelope.
var envelopeCases = []string{
	`{"schema":"xagent.connector.packet/v1","packet_id":"p1","type":"ping","time":1764700000000,"payload":{}}`,
	`{"schema":"xagent.connector.packet/v1","packet_id":"p1","request_id":"r1","reply_to":"q","connector_channel_id":"c1","type":"tool.invoke","time":-5,"payload":{"tool_id":"t","arguments":{"a":[1,"}",{"b":null}]}}}`,
	` { "type" : "pong" , "packet_id" : "p" , "payload" : [ 1 , 2 ] } `,
	`{"type":"a","type":"b","payload":{"x":1},"payload":{"y":2}}`,
	`{}`,
	`{"payload":null,"type":"ping"}`,
	`{"time":null,"type":"ping"}`,
	`{"time":1.5,"type":"ping"}`,
	`{"time":1e3,"type":"ping"}`,
	`{"time":123456789012345678901,"type":"ping"}`,
	`{"time":"1","type":"ping"}`,
	`{"type":null}`,
	`{"type":1}`,
	`{"type":"p\u0069ng"}`,
	`{"typ\u0065":"ping"}`,
	"{\"type\":\"p\xffng\"}",
	`{"Type":"ping"}`,
	`{"type":"ping","x_ext":{"a":1}}`,
	`{"type":"tool.invoke.ack","error":{"code":"internal","message":"m"}}`,
	`{"type":"tool.invoke.ack","error":null}`,
	`[]`,
	`null`,
	`"x"`,
	`{"type":"ping"`,
	`{"type":"ping"}x`,
	``,
}

func TestDecodeEnvelopeMatchesProtocol(t *testing.T) {
	for _, frame := range envelopeCases {
		want, wantErr := protocol.DecodeEnvelope([]byte(frame))
		got, gotErr := decodeEnvelope([]byte(frame))
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeEnvelope(%s) = %+v, %v; protocol.DecodeEnvelope = %+v, %v", frame, got, gotErr, want, wantErr)
		}
	}
}

func TestScanEnvelopeTakesCommonFrames(t *testing.T) {
	for _, frame := range envelopeCases[:4] {
		if scanEnvelope([]byte(frame)) == nil {
			t.Errorf("scanEnvelope(%s) = nil, want the fast path", frame)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, c := range envelopeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		want, wantErr := protocol.DecodeEnvelope(frame)
		got, gotErr := decodeEnvelope(frame)
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeEnvelope(%q) = %+v, %v; protocol.DecodeEnvelope = %+v, %v", frame, got, gotErr, want, wantErr)
		}
	})
}
