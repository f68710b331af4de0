package argcheck

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/xconn/xconn/internal/schemagen"
	"github.com/xconn/xconn/protocol"
)

// TestTypedToolPipeline checks the path a typed tool takes: schema from the
// Go type, the reserved channel argument injected, then argument checks.
func TestTypedToolPipeline(t *testing.T) {
	type SendInput struct {
		Text  string    `json:"text" desc:"Message text"`
		Mode  string    `json:"mode,omitempty" enum:"plain,markdown"`
		At    time.Time `json:"at,omitzero"`
		Count *int      `json:"count"`
	}
	schema, err := schemagen.For[SendInput]()
	if err != nil {
		t.Fatal(err)
	}
	schema, err = protocol.WithConnectorChannelIDInputSchema(schema)
	if err != nil {
		t.Fatalf("WithConnectorChannelIDInputSchema: %v", err)
	}
	v, err := Compile(schema)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	tests := []struct {
		args  string
		paths []string
	}{
		{`{"connector_channel_id":"ch_1","text":"hi"}`, nil},
		{`{"connector_channel_id":"ch_1","text":"hi","mode":"markdown","at":"2026-12-02T17:00:00Z","count":3}`, nil},
		{`{"text":"hi"}`, []string{"connector_channel_id"}},
		{`{"connector_channel_id":"ch_1","text":"hi","mode":"html","at":"yesterday","extra":true}`, []string{"at", "extra", "mode"}},
	}
	for _, tt := range tests {
		got := v.Validate(json.RawMessage(tt.args))
		if len(got) != len(tt.paths) {
			t.Fatalf("Validate(%s) = %v, want paths %v", tt.args, got, tt.paths)
		}
		for i, p := range tt.paths {
			if got[i].Path != p {
				t.Errorf("Validate(%s)[%d].Path = %q, want %q", tt.args, i, got[i].Path, p)
			}
		}
	}
}
