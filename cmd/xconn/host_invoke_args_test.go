package main

import (
	"encoding/json"
	"testing"
)

// withChannelArgument fills in a missing connector_channel_id, keeps a
// given one and leaves what is not an object to the connector to refuse.
func TestWithChannelArgument(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{"connector_channel_id":"cch_1"}`},
		{`{}`, `{"connector_channel_id":"cch_1"}`},
		{`{"x":1}`, `{"connector_channel_id":"cch_1","x":1}`},
		{`{"connector_channel_id":"other","x":1}`, `{"connector_channel_id":"other","x":1}`},
		{`[1]`, `[1]`},
		{`null`, `null`},
		{`{"x":`, `{"x":`},
	} {
		got := withChannelArgument(json.RawMessage(tc.in), "cch_1")
		if string(got) != tc.want {
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}
