package connector

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestInvokeAckCompact checks that a json.Marshal result taken as is gives
// the bytes of the general path.
func TestInvokeAckCompact(t *testing.T) {
	for _, v := range []any{map[string]string{"text": "<a> & \u2028 é"}, []int{1, 2}, "s", nil} {
		r, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := invokeAckPayload("t", r, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := invokeAckPayload("t", r, true); err != nil || !bytes.Equal(got, want) {
			t.Errorf("invokeAckPayload(%s, compact) = %s, %v; want %s", r, got, err, want)
		}
	}
}
