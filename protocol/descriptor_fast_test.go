package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fastAckSeeds are channel.open.ack payloads: the common shape and the
// shapes the fast decoder must leave to encoding/json.
var fastAckSeeds = []string{
	`{"connector_channel_id":"cch_1","connection_descriptor":{"schema":"xagent.connection-descriptor.v2","connection":{"connector_card_id":"im.x","connector_id":"conn_1","connector_channel_id":"cch_1","target_type":"im","profiles":["xagent.im.v2"],"status":"created"},"target":{"provider":"p","label":"L","display_name":"L not bound"},"tools":[{"tool_id":"t1","status":"unavailable","reason":"sign-in required"},{"tool_id":"t2","status":"available","target_permission_state":"granted"}]}}`,
	`{ "connector_channel_id" : "cch_1" , "connection_descriptor" : { "connection" : { "profiles" : [ ] } , "tools" : [ ] } }`,
	`{"connector_channel_id":"cch_1"}`,
	`{}`,
	`{"connector_channel_id":"cch_1","connection_descriptor":null}`,
	`{"connector_channel_id":"cch_1","connection_descriptor":{"connection":{"profiles":null}}}`,
	`{"connector_channel_id":"cch_1","connection_descriptor":{"tools":null}}`,
	`{"connector_channel_id":"cch_\u00e9","connection_descriptor":{}}`,
	`{"connector_channel_id":"cch_é","connection_descriptor":{"target":{"display_name":"über ✓"}}}`,
	`{"connector_channel_id":"a","connector_channel_id":"b"}`,
	`{"connector_channel_id":"a","Connector_Channel_ID":"b"}`,
	`{"connector_channel_id":"a","connection_descriptor":{"connection":{"status":"created","Status":"connected"}}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"x_ext":1}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"target":{"provider":"p","x":true}}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"tools":[{"tool_id":"t","x":[1]}]}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"tools":[1]}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"connection":{"profiles":["a",2]}}}`,
	`{"connector_channel_id":1}`,
	`{"connector_channel_id":"a","connection_descriptor":{"schema":"xagent.connection-descriptor.v1","connection":{"profile":"xagent.im.v1"}}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"connection":{},"connection":{}}}`,
	`{"connector_channel_id":"a","extra":{}}`,
	"{\"connector_channel_id\":\"bad \xff\"}",
	`[]`,
	`"x"`,
	``,
	`{"connector_channel_id":"a"`,
	`{"connector_channel_id":"a" "connection_descriptor":{}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"connection":{"status":"connected","x-signed-in-at":1790000000000}}}`,
	`{"connector_channel_id":"a","connection_descriptor":{"connection":{"x-signed-in-at":1,"x-signed-in-at":2}}}`,
}

// checkFastAck compares the fast decoder with DecodePayload on data: when
// the fast one takes data, both must give the same value.
func checkFastAck(t *testing.T, data []byte) (taken bool) {
	t.Helper()
	var fast ChannelOpenAckPayload
	if !DecodeChannelOpenAckFast(data, &fast) {
		if !reflect.DeepEqual(fast, ChannelOpenAckPayload{}) {
			t.Fatalf("declined %q but changed the payload to %+v", data, fast)
		}
		return false
	}
	var want ChannelOpenAckPayload
	if err := (&Envelope{Type: TypeChannelOpenAck, Payload: data}).DecodePayload(&want); err != nil {
		t.Fatalf("fast decoder took %q, which encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("decoded %q\n got %#v\nwant %#v", data, fast, want)
	}
	if fast.ConnectionDescriptor != nil {
		var d, wd Descriptor
		raw, _ := json.Marshal(want.ConnectionDescriptor)
		if !DecodeDescriptorFast(raw, &d) {
			return true // json.Marshal escaped a character (<, >, &, ...)
		}
		if err := json.Unmarshal(raw, &wd); err != nil || !reflect.DeepEqual(d, wd) {
			t.Fatalf("DecodeDescriptorFast(%s)\n got %#v\nwant %#v (%v)", raw, d, wd, err)
		}
	}
	return true
}

func TestDecodeChannelOpenAckFast(t *testing.T) {
	t.Parallel()
	takes := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 8: true, 27: true}
	for i, s := range fastAckSeeds {
		if got := checkFastAck(t, []byte(s)); got != takes[i] {
			t.Errorf("seed %d %s: taken %v, want %v", i, s, got, takes[i])
		}
	}
}

func FuzzDecodeDescriptorFast(f *testing.F) {
	for _, s := range fastAckSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastAck(t, data)
		var d, want Descriptor
		if DecodeDescriptorFast(data, &d) {
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("fast decoder took %q, which encoding/json rejects: %v", data, err)
			}
			if !reflect.DeepEqual(d, want) {
				t.Fatalf("decoded %q\n got %#v\nwant %#v", data, d, want)
			}
		}
	})
}
