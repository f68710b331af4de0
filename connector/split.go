package connector

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// TextUnit is how a target counts the length of a text.
type TextUnit uint8

const (
	// TextUnitBytes counts UTF-8 bytes (Feishu's request body, WeCom).
	TextUnitBytes TextUnit = iota
	// TextUnitUTF16 counts UTF-16 code units, as JavaScript strings do
	// (Telegram's 4,096, Discord's 2,000): an emoji outside the BMP
	// counts 2.
	TextUnitUTF16
	// TextUnitRunes counts Unicode code points.
	TextUnitRunes
)

// TextLimit is a target's longest message, Max units of Unit. It splits
// longer texts into parts that each fit, for a target that refuses them
// (Telegram, Discord, Slack) or an edit that must fit one message:
//
//   - a part never ends inside a grapheme cluster (an emoji ZWJ sequence,
//     a flag, a letter and its combining marks, a Hangul syllable), so no
//     part shows half a character;
//   - it prefers to end after a blank line, else a line break, else a
//     space, when one lies in the second half of the part; otherwise it
//     takes as much as fits;
//   - a Markdown fenced code block (``` or ~~~, with its info string) is
//     never cut in half: a block that fits in one part starts a new part,
//     and a longer block is closed at the end of a part and reopened, with
//     its fence and language, at the start of the next, the added fences
//     counted in the limit.
//
// Parts are the text's own bytes, in order (the fences a cut block gets
// aside), and parts of only white space are dropped: without code blocks,
// the parts joined are the text. A TextLimit is a value, safe for
// concurrent use; Max <= 0 means no limit.
type TextLimit struct {
	Max  int
	Unit TextUnit
}

// Len returns the length of s in the limit's unit.
func (l TextLimit) Len(s string) int {
	switch l.Unit {
	case TextUnitUTF16:
		n := 0
		for _, r := range s {
			n += runeUnits16(r)
		}
		return n
	case TextUnitRunes:
		return utf8.RuneCountInString(s)
	}
	return len(s)
}

// runeUnits16 is r's length in UTF-16 (an invalid rune is one unit, as
// its replacement is).
func runeUnits16(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// units is the length of one grapheme cluster g.
func (l TextLimit) units(g string) int {
	if len(g) == 1 || l.Unit == TextUnitBytes {
		return len(g)
	}
	return l.Len(g)
}

// Split cuts text into parts of at most Max units each (see TextLimit),
// dropping parts of only white space. An empty or blank text has no parts.
func (l TextLimit) Split(text string) []string {
	var parts []string
	for text != "" {
		head, rest := l.Cut(text)
		if strings.TrimSpace(head) != "" {
			parts = append(parts, head)
		}
		text = rest
	}
	return parts
}

// Cut returns the first part of text (all of it when it fits) and what
// remains, which starts with the reopened fence when the cut fell inside a
// code block. It reads about Max units of text (a code block that may move
// to the next part is read to its end), not all of it, so showing the
// first part of a growing stream costs the same on every delta.
func (l TextLimit) Cut(text string) (head, rest string) {
	if l.Max <= 0 || text == "" {
		return text, ""
	}
	c := l.scan(text)
	if c.all {
		return text, ""
	}
	at := c.pick(l.Max)
	f := c.fenceAt(at)
	if f == nil {
		return text[:at], text[at:]
	}
	// Inside a code block: move the whole block to the next part when it
	// fits in one and something precedes it here.
	if f.start > 0 && l.blockFits(text, f) {
		return text[:f.start], text[f.start:]
	}
	closing := f.marker
	if !strings.HasSuffix(text[:at], "\n") {
		closing = "\n" + closing
	}
	rest = f.open + text[at:]
	if len(rest) >= len(text) {
		// The reopened fence would leave as much to do as before (a tiny
		// limit): cut plainly, which always makes progress.
		at = c.plain
		return text[:at], text[at:]
	}
	return text[:at] + closing, rest
}

// fence is an open Markdown code block.
type fence struct {
	start  int    // byte offset of its opening line
	open   string // the opening line, with its newline
	marker string // the closing fence: the opening's backticks or tildes
}

// cutScan is what one pass over the head of a text found.
type cutScan struct {
	all bool // the whole text fits
	// The best cut points, byte offsets into the text (0: none), the
	// units before them, and the code block each is in: after a blank
	// line, a line break, a space, and at any grapheme boundary.
	para, line, space, any     int
	paraU, lineU, spaceU, anyU int
	paraF, lineF, spaceF, anyF *fence
	// plain is the furthest boundary that fits, fences ignored.
	plain int
}

// scan walks text's grapheme clusters until Max units are passed,
// tracking code fences line by line and recording the best cut points,
// each leaving room for the closing fence a cut inside a block adds. No
// cut point lies on a fence line itself, nor right after an opening one
// (the part would end with an empty block).
func (l TextLimit) scan(text string) cutScan {
	var c cutScan
	var open *fence
	closing := false // the current line closes open
	units, pos := 0, 0
	lineStart := true
	for pos < len(text) {
		if lineStart && mayBeFence(text[pos:]) {
			lineStart = false
			ln := lineAt(text, pos)
			if open == nil {
				if m, ok := openingFence(ln); ok {
					open = &fence{start: pos, open: ln, marker: m}
					if !strings.HasSuffix(ln, "\n") {
						open.open += "\n"
					}
				}
			} else if closingFence(ln, open.marker) {
				closing = true
			}
		}
		lineStart = false
		g, u := l.step(text, pos, units, open)
		if units+u > l.Max {
			if units == 0 {
				// One cluster longer than the limit: cut it on a code
				// point that fits, at least one.
				c.plain = l.runeCut(text[pos : pos+g])
				c.any, c.anyU = c.plain, units
			}
			return c
		}
		units += u
		pos += g
		c.plain = pos
		last := text[pos-1]
		if last == '\n' {
			lineStart = true
			if closing {
				open, closing = nil, false
			}
		}
		if open != nil && (closing || pos <= open.start+len(open.open)) {
			continue // on a fence line, or right after the opening one
		}
		if open != nil {
			reserve := len(open.marker) // the closing fence ...
			if last != '\n' {
				reserve++ // ... on a line of its own
			}
			if units+reserve > l.Max {
				continue
			}
		}
		switch {
		case last == '\n' && pos >= 2 && text[pos-2] == '\n':
			c.para, c.paraU, c.paraF = pos, units, open
			c.line, c.lineU, c.lineF = pos, units, open
		case last == '\n':
			c.line, c.lineU, c.lineF = pos, units, open
		case last == ' ' && open == nil: // code lines are cut at line ends
			c.space, c.spaceU, c.spaceF = pos, units, open
		}
		c.any, c.anyU, c.anyF = pos, units, open
	}
	c.all = true
	return c
}

// step returns the bytes and units of the next step of scan at pos: a
// run of printable ASCII without spaces (one unit a byte, a boundary after
// each; at most what fits, the room for a closing fence kept), or one
// grapheme cluster.
func (l TextLimit) step(text string, pos, units int, open *fence) (g, u int) {
	b := text[pos]
	if b > ' ' && b < 0x7f {
		room := l.Max - units
		if open != nil {
			room -= len(open.marker) + 1
		}
		end := pos + 1
		for end < len(text) && end-pos < room && text[end] > ' ' && text[end] < 0x7f {
			end++
		}
		switch {
		case end == len(text) || text[end] < 0x80:
			return end - pos, end - pos
		case end-pos > 1:
			return end - pos - 1, end - pos - 1 // the last may take a mark
		}
	} else if b < 0x80 && b != '\r' && (pos+1 == len(text) || text[pos+1] < 0x80) {
		return 1, 1 // a space, a line break, a control
	}
	g = nextGrapheme(text[pos:])
	return g, l.units(text[pos : pos+g])
}

// pick chooses the cut point: a blank line, else a line break, else a
// space in the second half of the part, else as much as fits.
func (c *cutScan) pick(max int) int {
	half := max / 2
	switch {
	case c.para > 0 && c.paraU >= half:
		return c.para
	case c.line > 0 && c.lineU >= half:
		return c.line
	case c.space > 0 && c.spaceU >= half:
		return c.space
	case c.any > 0:
		return c.any
	}
	return c.plain
}

// fenceAt returns the code block open at cut point at.
func (c *cutScan) fenceAt(at int) *fence {
	switch at {
	case c.para:
		return c.paraF
	case c.line:
		return c.lineF
	case c.space:
		return c.spaceF
	case c.any:
		return c.anyF
	}
	return nil
}

// runeCut returns how many bytes of one oversized cluster g fit: whole
// code points, at least one.
func (l TextLimit) runeCut(g string) int {
	units, i := 0, 0
	for i < len(g) {
		r, n := utf8.DecodeRuneInString(g[i:])
		u := n
		switch l.Unit {
		case TextUnitUTF16:
			u = runeUnits16(r)
		case TextUnitRunes:
			u = 1
		}
		if units+u > l.Max && i > 0 {
			break
		}
		units += u
		i += n
	}
	return i
}

// openingFence reports whether ln opens a fenced code block (CommonMark:
// up to three spaces, then three or more backticks or tildes; a backtick
// fence's info string has no backtick) and returns its fence characters.
func openingFence(ln string) (string, bool) {
	s := strings.TrimLeft(ln, " ")
	if len(ln)-len(s) > 3 || len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return "", false
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 || (s[0] == '`' && strings.IndexByte(s[n:], '`') >= 0) {
		return "", false
	}
	return s[:n], true
}

// closingFence reports whether ln closes a block opened with marker: at
// least as many of the same characters, then only white space.
func closingFence(ln, marker string) bool {
	s := strings.TrimLeft(ln, " ")
	if len(ln)-len(s) > 3 {
		return false
	}
	n := 0
	for n < len(s) && s[n] == marker[0] {
		n++
	}
	return n >= len(marker) && strings.TrimSpace(s[n:]) == ""
}

// mayBeFence reports whether a line starting s could be a fence line: up
// to three spaces, then a backtick or a tilde. Only such lines are read
// whole.
func mayBeFence(s string) bool {
	for i := 0; i < len(s) && i < 4; i++ {
		switch s[i] {
		case ' ':
			continue
		case '`', '~':
			return true
		}
		return false
	}
	return false
}

// lineAt returns the line of text starting at pos, with its newline.
func lineAt(text string, pos int) string {
	end := strings.IndexByte(text[pos:], '\n')
	if end < 0 {
		return text[pos:]
	}
	return text[pos : pos+end+1]
}

// blockFits reports whether the code block of f in text, from its opening
// line to the end of its closing line (or of the text), is at most Max
// units. It reads no further than Max units.
func (l TextLimit) blockFits(text string, f *fence) bool {
	units := l.Len(f.open)
	pos := f.start + len(f.open)
	for pos < len(text) && units <= l.Max {
		ln := lineAt(text, pos)
		units += l.Len(ln)
		if closingFence(ln, f.marker) {
			break
		}
		pos += len(ln)
	}
	return units <= l.Max
}
