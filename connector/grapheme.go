package connector

import (
	"unicode"
	"unicode/utf8"
)

// Extended grapheme clusters (Unicode UAX #29), as far as a text splitter
// needs them: a cut must never separate what a reader sees as one
// character. The rules kept are GB3-GB5 (CR LF, controls), GB6-GB8
// (Hangul syllables), GB9/GB9a (extending and spacing marks, ZWJ, variation
// selectors, emoji modifiers, tag characters), GB11 (emoji ZWJ sequences)
// and GB12/GB13 (regional-indicator pairs: flags). Left out: Prepend marks
// (GB9b) and Indic conjunct breaks (GB9c), which only ever keep a few more
// code points together; a cut next to them is still on a code-point
// boundary. The tables are derived from the unicode package and a few
// ranges of the Emoji data, so no dependency is needed.

// graphemeClass is the Grapheme_Cluster_Break property, reduced.
type graphemeClass uint8

const (
	gcOther graphemeClass = iota
	gcCR
	gcLF
	gcControl
	gcExtend
	gcZWJ
	gcSpacingMark
	gcRegional
	gcL
	gcV
	gcT
	gcLV
	gcLVT
	gcPictographic // Extended_Pictographic (an emoji base)
)

// classOf returns r's class.
func classOf(r rune) graphemeClass {
	switch {
	case r < 0x7f && r >= 0x20:
		return gcOther // ASCII printable: the common case, first
	case r >= 0xa0 && r < 0x300 && r != 0xa9 && r != 0xae:
		return gcOther // Latin-1 and Latin Extended: no marks, no emoji
	case r == '\r':
		return gcCR
	case r == '\n':
		return gcLF
	case r == 0x200d:
		return gcZWJ
	case r == 0x200c, r >= 0xff9e && r <= 0xff9f, r >= 0x1f3fb && r <= 0x1f3ff, r >= 0xe0020 && r <= 0xe007f:
		return gcExtend // ZWNJ, halfwidth sound marks, emoji modifiers, tags
	case r >= 0x1f1e6 && r <= 0x1f1ff:
		return gcRegional
	case r >= 0x1100 && r <= 0x115f, r >= 0xa960 && r <= 0xa97c:
		return gcL
	case r >= 0x1160 && r <= 0x11a7, r >= 0xd7b0 && r <= 0xd7c6:
		return gcV
	case r >= 0x11a8 && r <= 0x11ff, r >= 0xd7cb && r <= 0xd7fb:
		return gcT
	case r >= 0xac00 && r <= 0xd7a3:
		if (r-0xac00)%28 == 0 {
			return gcLV
		}
		return gcLVT
	case unicode.In(r, unicode.Mn, unicode.Me):
		return gcExtend
	case unicode.Is(unicode.Mc, r):
		return gcSpacingMark
	case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cc, r):
		return gcControl
	case pictographic(r):
		return gcPictographic
	}
	return gcOther
}

// pictographic approximates Extended_Pictographic: the emoji blocks and
// the older symbols that emoji sequences start with.
func pictographic(r rune) bool {
	switch {
	case r < 0xa9:
		return false
	case r == 0xa9, r == 0xae, r == 0x203c, r == 0x2049, r == 0x2122, r == 0x2139,
		r >= 0x2194 && r <= 0x21aa, r >= 0x231a && r <= 0x23ff, r == 0x24c2,
		r >= 0x25aa && r <= 0x25fe, r >= 0x2600 && r <= 0x27bf, r >= 0x2934 && r <= 0x2935,
		r >= 0x2b05 && r <= 0x2b55, r == 0x3030, r == 0x303d, r == 0x3297, r == 0x3299:
		return true
	case r >= 0x1f000 && r <= 0x1faff:
		return !(r >= 0x1f1e6 && r <= 0x1f1ff) && !(r >= 0x1f3fb && r <= 0x1f3ff)
	case r >= 0x1fc00 && r <= 0x1fffd:
		return true
	}
	return false
}

// nextGrapheme returns the length in bytes of the first extended grapheme
// cluster of s (0 only for an empty s). Invalid UTF-8 counts as one
// cluster per byte.
func nextGrapheme(s string) int {
	if s == "" {
		return 0
	}
	r, n := utf8.DecodeRuneInString(s)
	if r < 0x80 && r != '\r' && (len(s) == 1 || s[1] < 0x80) {
		return 1 // ASCII followed by ASCII: always a boundary (CR LF aside)
	}
	prev := classOf(r)
	if r == utf8.RuneError && n <= 1 {
		return n
	}
	pict := prev == gcPictographic // GB11: inside ExtPict Extend* (ZWJ)?
	regionals := 0
	if prev == gcRegional {
		regionals = 1
	}
	i := n
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		cur := classOf(r)
		if !joins(prev, cur, pict, regionals) {
			return i
		}
		switch {
		case cur == gcRegional:
			regionals++
		case cur == gcPictographic:
			pict = true
		case cur != gcExtend && cur != gcZWJ:
			pict = false
		}
		prev = cur
		i += size
	}
	return i
}

// joins reports whether no boundary lies between a code point of class
// prev and one of class cur. pict says the cluster so far is an
// Extended_Pictographic followed by Extend marks (and maybe a ZWJ);
// regionals counts the regional indicators in it.
func joins(prev, cur graphemeClass, pict bool, regionals int) bool {
	switch {
	case prev == gcCR:
		return cur == gcLF // GB3, GB4
	case prev == gcLF || prev == gcControl || cur == gcCR || cur == gcLF || cur == gcControl:
		return false // GB4, GB5
	case prev == gcL:
		return cur == gcL || cur == gcV || cur == gcLV || cur == gcLVT || cur == gcExtend || cur == gcZWJ || cur == gcSpacingMark // GB6
	case (prev == gcLV || prev == gcV) && (cur == gcV || cur == gcT): // GB7
		return true
	case (prev == gcLVT || prev == gcT) && cur == gcT: // GB8
		return true
	case cur == gcExtend || cur == gcZWJ || cur == gcSpacingMark: // GB9, GB9a
		return true
	case prev == gcZWJ && cur == gcPictographic: // GB11
		return pict
	case prev == gcRegional && cur == gcRegional: // GB12, GB13
		return regionals%2 == 1
	}
	return false // GB999
}
