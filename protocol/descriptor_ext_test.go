package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSignedInAt: connection.x-signed-in-at round-trips through JSON, is
// accepted by the official Descriptor schema, and a missing or malformed
// member reads as absent.
func TestSignedInAt(t *testing.T) {
	at := time.UnixMilli(1790000000123)
	d := Descriptor{Schema: DescriptorSchema,
		Connection: Connection{ConnectorCardID: "im.x", ConnectorID: "conn_1", ConnectorChannelID: "cch_1",
			TargetType: TargetIM, Profiles: []Profile{ProfileIMv2}, Status: StatusConnected},
		Target: DescriptorTarget{Provider: "x", DisplayName: "X"}}
	d.Connection.SetSignedInAt(at)
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"x-signed-in-at":1790000000123`) {
		t.Fatalf("encoded %s", raw)
	}
	if vs := ValidateSchema(SchemaDescriptor, raw); len(vs) > 0 {
		t.Fatalf("the official schema refuses the member: %v", vs)
	}
	back, err := ParseDescriptor(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := back.Connection.SignedInAt(); !ok || !got.Equal(at) {
		t.Fatalf("SignedInAt = %v, %v; want %v", got, ok, at)
	}
	back.Connection.SetSignedInAt(time.Time{})
	if _, ok := back.Connection.SignedInAt(); ok || back.Connection.Extensions != nil {
		t.Fatalf("after removal: %v", back.Connection.Extensions)
	}
	for _, bad := range []string{`"soon"`, `-5`, `1.5`, `null`} {
		c := Connection{Extensions: Extensions{ExtSignedInAt: json.RawMessage(bad)}}
		if got, ok := c.SignedInAt(); ok {
			t.Errorf("%s read as %v", bad, got)
		}
	}
}
