package mcp

import (
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// TestAnnotationsOf: the protocol's Card has no tool mode, so a tool
// without an extension keeps the MCP defaults (it may change its world);
// an "x-xconn-mode" or "mode" extension, or MCP hints under
// "annotations", refine them; a malformed extension is ignored.
func TestAnnotationsOf(t *testing.T) {
	f := false
	for _, tc := range []struct {
		name                 string
		ext                  map[string]string
		readOnly, idempotent bool
		destructive          *bool
	}{
		{"no extension", nil, false, false, nil},
		{"observe", map[string]string{"x-xconn-mode": `"observe"`}, true, false, &f},
		{"act", map[string]string{"mode": `"act"`}, false, true, &f},
		{"serial", map[string]string{"mode": `"serial"`}, false, false, nil},
		{"hints", map[string]string{"annotations": `{"readOnlyHint":true,"idempotentHint":true}`}, true, true, nil},
		{"malformed", map[string]string{"mode": `7`, "annotations": `"x"`}, false, false, nil},
	} {
		tool := &protocol.Tool{Extensions: protocol.Extensions{}}
		for k, v := range tc.ext {
			tool.Extensions[k] = json.RawMessage(v)
		}
		a := annotationsOf(tool)
		if a.ReadOnlyHint != tc.readOnly || a.IdempotentHint != tc.idempotent || (a.DestructiveHint == nil) != (tc.destructive == nil) ||
			(a.DestructiveHint != nil && *a.DestructiveHint != *tc.destructive) {
			t.Errorf("%s: %+v", tc.name, a)
		}
	}
}
