package adb

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseUI: any bytes parse or fail without panicking; a dump that
// parses has at most MaxUINodes nodes, texts within MaxUITextRunes (plus
// the ellipsis) and no password text.
func FuzzParseUI(f *testing.F) {
	f.Add([]byte(`<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node text="OK" clickable="true" bounds="[0,0][10,10]"/></hierarchy>`))
	f.Add([]byte(`<hierarchy><node password="true" text="secret" class="android.widget.EditText"/></hierarchy>`))
	f.Add([]byte(`<hierarchy><node bounds="[-5,-5][999999,2]"><node/></node></hierarchy>`))
	f.Add([]byte(`<x>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseUI(b)
		if err != nil {
			return
		}
		if len(d.Nodes) > MaxUINodes || d.Total < len(d.Nodes) || d.Truncated != (d.Total > len(d.Nodes)) {
			t.Fatalf("%d nodes, total %d, truncated %v", len(d.Nodes), d.Total, d.Truncated)
		}
		for _, n := range d.Nodes {
			for _, s := range []string{n.Text, n.Desc, n.ResourceID, n.Class} {
				if utf8.RuneCountInString(s) > MaxUITextRunes+1 {
					t.Fatalf("text of %d runes", utf8.RuneCountInString(s))
				}
			}
			if n.Password && n.Text != "" {
				t.Fatalf("password text returned: %+v", n)
			}
		}
	})
}

// FuzzParseOutputs: the status parsers never panic and return values in
// range, whatever the device prints.
func FuzzParseOutputs(f *testing.F) {
	f.Add([]byte("Current Battery Service state:\n  AC powered: true\n  status: 2\n  level: 55\n"))
	f.Add([]byte("Physical size: 1080x2400\nOverride size: 720x1600\n"))
	f.Add([]byte("  mCurrentFocus=Window{5f3a2b1 u0 com.android.settings/com.android.settings.Settings}\n"))
	f.Add([]byte("Display Power: state=OFF\nmWakefulness=Awake"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if level, _ := parseBattery(b); level < -1 || level > 100 {
			t.Fatalf("level %d", level)
		}
		_ = parseScreenOn(b)
		if w, h, ok := parseWMSize(b); ok && (w <= 0 || h <= 0) {
			t.Fatalf("size %dx%d", w, h)
		}
		if pkg, act := parseForeground(b); pkg != "" && (act == "" || strings.ContainsAny(pkg, " /")) {
			t.Fatalf("foreground %q %q", pkg, act)
		}
	})
}

// FuzzTextChunks: accepted text is printable ASCII within MaxTextInput,
// and the chunks, decoded as `input text` decodes them ("%s" is a space),
// give back exactly the text.
func FuzzTextChunks(f *testing.F) {
	f.Add("hello world")
	f.Add("100%s sure %%s")
	f.Add("it's; rm -rf /")
	f.Add("héllo")
	f.Fuzz(func(t *testing.T, text string) {
		chunks, err := textChunks(text)
		if err != nil {
			return
		}
		if text == "" || len(text) > MaxTextInput {
			t.Fatalf("accepted %d characters", len(text))
		}
		var got strings.Builder
		for _, c := range chunks {
			if strings.Contains(c, " ") {
				t.Fatalf("chunk %q holds a space", c)
			}
			got.WriteString(strings.ReplaceAll(c, "%s", " "))
		}
		if got.String() != text {
			t.Fatalf("%q typed as %q (chunks %q)", text, got.String(), chunks)
		}
	})
}
