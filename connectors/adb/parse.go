package adb

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Parsers of the device's command output. Each reads what Android 8 to 15
// print, tolerates anything else (a field it cannot find is left zero)
// and never fails on hostile input; they are fuzzed.

// parseBattery reads level and charging from dumpsys battery.
func parseBattery(out []byte) (level int, charging bool) {
	level = -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "level":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 100 {
				level = n
			}
		case "status":
			charging = charging || v == "2" || v == "5" // BATTERY_STATUS_CHARGING, _FULL
		case "AC powered", "USB powered", "Wireless powered", "Dock powered":
			charging = charging || v == "true"
		}
	}
	return level, charging
}

// parseScreenOn reads dumpsys power: "Display Power: state=ON", else
// mWakefulness=Awake.
func parseScreenOn(out []byte) bool {
	if i := bytes.Index(out, []byte("Display Power: state=")); i >= 0 {
		return bytes.HasPrefix(out[i+len("Display Power: state="):], []byte("ON"))
	}
	return bytes.Contains(out, []byte("mWakefulness=Awake"))
}

var wmSize = regexp.MustCompile(`(Physical|Override) size: (\d{1,5})x(\d{1,5})`)

// parseWMSize reads wm size: the override size when set, else the
// physical one.
func parseWMSize(out []byte) (w, h int, ok bool) {
	for _, m := range wmSize.FindAllSubmatch(out, 4) {
		pw, _ := strconv.Atoi(string(m[2]))
		ph, _ := strconv.Atoi(string(m[3]))
		if pw <= 0 || ph <= 0 {
			continue
		}
		if !ok || string(m[1]) == "Override" {
			w, h, ok = pw, ph, true
		}
	}
	return w, h, ok
}

var focus = regexp.MustCompile(`(?:mCurrentFocus=Window\{|mFocusedApp=ActivityRecord\{|mResumedActivity: ActivityRecord\{)[^}\n]*? ([A-Za-z][\w.]*)/([\w.$]+)`)

// parseForeground reads the focused app and activity from dumpsys window
// displays (mCurrentFocus, else mFocusedApp).
func parseForeground(out []byte) (pkg, activity string) {
	m := focus.FindSubmatch(out)
	if m == nil {
		return "", ""
	}
	pkg, activity = string(m[1]), string(m[2])
	if strings.HasPrefix(activity, ".") {
		activity = pkg + activity
	}
	return pkg, activity
}

// UIDump is android_ui_dump's result: the elements of the screen a model
// can read or use, in document order, bounded.
type UIDump struct {
	// Package is the app the first element belongs to.
	Package string `json:"package,omitempty"`
	// Rotation is the display rotation (0, 1, 2, 3: quarter turns).
	Rotation int      `json:"rotation"`
	Nodes    []UINode `json:"nodes"`
	// Total counts the elements that qualified; Truncated says when more
	// than MaxUINodes did and only the first are listed.
	Total     int  `json:"total"`
	Truncated bool `json:"truncated,omitempty"`
}

// UINode is one element: text, description or resource id to recognise
// it, bounds in pixels, and its centre to tap.
type UINode struct {
	Text       string `json:"text,omitempty"`
	Desc       string `json:"content_desc,omitempty"`
	ResourceID string `json:"resource_id,omitempty"`
	Class      string `json:"class,omitempty"`
	// Bounds are left, top, right, bottom in pixels.
	Bounds     [4]int `json:"bounds"`
	X          int    `json:"x"`
	Y          int    `json:"y"`
	Clickable  bool   `json:"clickable,omitempty"`
	Scrollable bool   `json:"scrollable,omitempty"`
	Editable   bool   `json:"editable,omitempty"`
	Checked    bool   `json:"checked,omitempty"`
	Focused    bool   `json:"focused,omitempty"`
	Disabled   bool   `json:"disabled,omitempty"`
	Password   bool   `json:"password,omitempty"`
}

var boundsPattern = regexp.MustCompile(`^\[(-?\d{1,6}),(-?\d{1,6})\]\[(-?\d{1,6}),(-?\d{1,6})\]$`)

// maxUIDepth bounds the nesting ParseUI follows.
const maxUIDepth = 256

// ParseUI reads a uiautomator dump (at most MaxUIXMLBytes) into the
// elements that have text or a description or can be clicked, scrolled,
// checked or edited, at most MaxUINodes of them with texts cut to
// MaxUITextRunes. The text of a password field is never returned.
func ParseUI(b []byte) (UIDump, error) {
	if len(b) > MaxUIXMLBytes {
		return UIDump{}, errors.New("accessibility dump too large")
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var d UIDump
	d.Nodes = []UINode{}
	depth, sawRoot := 0, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return UIDump{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxUIDepth {
				return UIDump{}, errors.New("accessibility dump nested too deeply")
			}
			switch t.Name.Local {
			case "hierarchy":
				sawRoot = true
				d.Rotation, _ = strconv.Atoi(attr(t, "rotation"))
			case "node":
				n, pkg, keep := uiNode(t)
				if d.Package == "" && pkg != "" {
					d.Package = pkg
				}
				if !keep {
					continue
				}
				d.Total++
				if len(d.Nodes) < MaxUINodes {
					d.Nodes = append(d.Nodes, n)
				} else {
					d.Truncated = true
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	if !sawRoot {
		return UIDump{}, errors.New("no hierarchy element")
	}
	return d, nil
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func uiNode(t xml.StartElement) (n UINode, pkg string, keep bool) {
	is := func(name string) bool { return attr(t, name) == "true" }
	n = UINode{
		Text: cut(attr(t, "text")), Desc: cut(attr(t, "content-desc")), ResourceID: cut(attr(t, "resource-id")),
		Clickable: is("clickable") || is("long-clickable"), Scrollable: is("scrollable"), Checked: is("checked"),
		Focused: is("focused"), Disabled: attr(t, "enabled") == "false", Password: is("password"),
	}
	class := attr(t, "class")
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		class = class[i+1:]
	}
	n.Class = cut(class)
	n.Editable = strings.Contains(n.Class, "EditText")
	if n.Password {
		n.Text = ""
	}
	if m := boundsPattern.FindStringSubmatch(attr(t, "bounds")); m != nil {
		for i := range 4 {
			n.Bounds[i], _ = strconv.Atoi(m[i+1])
		}
		n.X, n.Y = (n.Bounds[0]+n.Bounds[2])/2, (n.Bounds[1]+n.Bounds[3])/2
	}
	keep = n.Text != "" || n.Desc != "" || n.Clickable || n.Scrollable || is("checkable") || n.Editable
	return n, attr(t, "package"), keep
}

// cut bounds a string to MaxUITextRunes characters.
func cut(s string) string {
	if len(s) <= MaxUITextRunes {
		return s
	}
	r := []rune(s)
	if len(r) <= MaxUITextRunes {
		return s
	}
	return string(r[:MaxUITextRunes]) + "…"
}
