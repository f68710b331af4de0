package connector_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xconn/xconn/connector"
)

func TestTextLimitLen(t *testing.T) {
	s := "añ😀" // 1+2+4 bytes, 3 runes, 1+1+2 UTF-16 units
	for _, tc := range []struct {
		unit connector.TextUnit
		want int
	}{{connector.TextUnitBytes, 7}, {connector.TextUnitRunes, 3}, {connector.TextUnitUTF16, 4}} {
		if got := (connector.TextLimit{Max: 10, Unit: tc.unit}).Len(s); got != tc.want {
			t.Errorf("Len in unit %d = %d, want %d", tc.unit, got, tc.want)
		}
	}
}

// clusters are texts that each read as one character.
var clusters = map[string]string{
	"family (ZWJ)":      "👨‍👩‍👧‍👦",
	"flag":              "🇯🇵",
	"tag flag":          "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
	"skin tone":         "👍🏽",
	"keycap":            "1\uFE0F\u20E3",
	"combining accents": "e\u0301\u0323",
	"hangul jamo":       "\u1112\u1161\u11AB",
	"hangul LV+T":       "\uAC00\u11A8",
	"CR LF":             "\r\n",
	"devanagari mark":   "\u0915\u093F", // KA + vowel sign I (a spacing mark)
	"rainbow flag":      "🏳️‍🌈",
}

func TestNeverCutsAGrapheme(t *testing.T) {
	for name, g := range clusters {
		t.Run(name, func(t *testing.T) {
			for _, unit := range []connector.TextUnit{connector.TextUnitBytes, connector.TextUnitUTF16, connector.TextUnitRunes} {
				l := connector.TextLimit{Unit: unit}
				one := l.Len(g)
				text := strings.Repeat("x"+g, 20)
				// Every limit from one cluster (plus its x) up: no cut may
				// fall inside a cluster.
				for l.Max = one + 1; l.Max < 3*(one+1); l.Max++ {
					parts := cutAll(l, text)
					if strings.Join(parts, "") != text {
						t.Fatalf("unit %d max %d: parts do not add up", unit, l.Max)
					}
					for _, p := range parts {
						if l.Len(p) > l.Max {
							t.Fatalf("unit %d max %d: part %q longer than the limit", unit, l.Max, p)
						}
						if strings.Trim(strings.ReplaceAll(p, g, ""), "x") != "" {
							t.Fatalf("unit %d max %d: part %q cuts %q", unit, l.Max, p, g)
						}
					}
				}
			}
		})
	}
}

// cutAll cuts text with Cut until nothing remains, keeping blank parts.
func cutAll(l connector.TextLimit, text string) []string {
	var parts []string
	for text != "" {
		var head string
		head, text = l.Cut(text)
		parts = append(parts, head)
	}
	return parts
}

func TestSplitPrefersBreaks(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    connector.TextLimit
		text string
		want []string
	}{
		{"fits", connector.TextLimit{Max: 20}, "short", []string{"short"}},
		{"no limit", connector.TextLimit{}, "any length", []string{"any length"}},
		{"space", connector.TextLimit{Max: 10}, "aaaa bbbb cccc", []string{"aaaa bbbb ", "cccc"}},
		{"line over space", connector.TextLimit{Max: 12}, "aaa bbb\nccc dd", []string{"aaa bbb\n", "ccc dd"}},
		{"blank line over line", connector.TextLimit{Max: 16}, "aaaaaa\n\nbb\ncccc ddd", []string{"aaaaaa\n\n", "bb\ncccc ddd"}},
		{"a break in the first half is not worth it", connector.TextLimit{Max: 10}, "a bcdefghijklm", []string{"a bcdefghi", "jklm"}},
		{"blank parts dropped", connector.TextLimit{Max: 4}, "abcd\n\n\n\n\n\nefgh", []string{"abcd", "efgh"}},
		{"runes", connector.TextLimit{Max: 3, Unit: connector.TextUnitRunes}, "äöüäöü", []string{"äöü", "äöü"}},
		{"utf16 counts astral twice", connector.TextLimit{Max: 4, Unit: connector.TextUnitUTF16}, "😀😀😀", []string{"😀😀", "😀"}},
		{"a cluster longer than the limit is cut on code points", connector.TextLimit{Max: 2, Unit: connector.TextUnitRunes},
			"e\u0301\u0323", []string{"e\u0301", "\u0323"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.l.Split(tc.text)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("Split = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSplitCodeBlocks(t *testing.T) {
	code := "```go\nfunc a() {}\nfunc b() {}\nfunc c() {}\n```\n"
	for _, tc := range []struct {
		name string
		max  int
		text string
		want []string
	}{
		{"a block that fits moves to the next part", 60,
			"Intro text that is long enough.\n" + code + "after",
			[]string{"Intro text that is long enough.\n", code + "after"}},
		{"a longer block is closed and reopened with its language", 33,
			code,
			[]string{"```go\nfunc a() {}\nfunc b() {}\n```", "```go\nfunc c() {}\n```\n"}},
		{"tildes, and a block without its closing fence", 26,
			"~~~~ sh\necho 1\necho 2\necho 3\n",
			[]string{"~~~~ sh\necho 1\necho 2\n~~~~", "~~~~ sh\necho 3\n"}},
		{"indented fence", 34,
			"   ```py\nx = 1\ny = 2\nz = 3\nw = 4\n   ```\n",
			[]string{"   ```py\nx = 1\ny = 2\nz = 3\n```", "   ```py\nw = 4\n   ```\n"}},
		{"four spaces is not a fence", 12,
			"    ```\nabc def ghi\n",
			[]string{"    ```\n", "abc def ghi\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := connector.TextLimit{Max: tc.max}
			got := l.Split(tc.text)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("Split =\n%q\nwant\n%q", got, tc.want)
			}
			for _, p := range got {
				if len(p) > tc.max {
					t.Fatalf("part of %d bytes: %q", len(p), p)
				}
			}
		})
	}
}

// FuzzTextLimitCut checks Cut's promises on any text: parts fit (a single
// code point aside), make progress, add up to the text when it has no
// fences, and end on grapheme boundaries.
func FuzzTextLimitCut(f *testing.F) {
	f.Add("hello world, this is a test\n\nwith lines", 10, uint8(0))
	f.Add("👨‍👩‍👧‍👦🇯🇵e\u0301 text", 5, uint8(1))
	f.Add("```go\ncode\n```\ntext ```", 8, uint8(2))
	f.Add("~~~\n\n\n~~~~\n", 4, uint8(0))
	f.Fuzz(func(t *testing.T, text string, max int, unit uint8) {
		if max <= 0 || max > 1<<16 || len(text) > 1<<14 {
			return
		}
		l := connector.TextLimit{Max: max, Unit: connector.TextUnit(unit % 3)}
		fences := strings.Contains(text, "```") || strings.Contains(text, "~~~")
		var joined strings.Builder
		rest := text
		for i := 0; rest != ""; i++ {
			if i > len(text)+1 {
				t.Fatalf("no progress cutting %q at %d", text, max)
			}
			head, next := l.Cut(rest)
			if head == "" {
				t.Fatalf("empty part of %q", rest)
			}
			if l.Len(head) > l.Max && utf8.RuneCountInString(head) > 1 {
				t.Fatalf("part %q longer than %d", head, max)
			}
			if !fences && utf8.ValidString(text) && next != "" && !strings.HasPrefix(rest, head) {
				t.Fatalf("part %q is not a prefix", head)
			}
			joined.WriteString(head)
			rest = next
		}
		if !fences && joined.String() != text {
			t.Fatalf("parts of %q add up to %q", text, joined.String())
		}
	})
}

func ExampleTextLimit() {
	telegram := connector.TextLimit{Max: 30, Unit: connector.TextUnitUTF16}
	for _, part := range telegram.Split("The plan:\n```sh\nmake build\nmake test\nmake deploy\n```\nDone: 👨‍👩‍👧‍👦👨‍👩‍👧‍👦👨‍👩‍👧‍👦") {
		fmt.Printf("%q\n", part) // one target message each
	}
	// Output:
	// "The plan:\n```sh\nmake build\n```"
	// "```sh\nmake test\n```"
	// "```sh\nmake deploy\n```\n"
	// "Done: 👨\u200d👩\u200d👧\u200d👦👨\u200d👩\u200d👧\u200d👦"
	// "👨\u200d👩\u200d👧\u200d👦"
}

func BenchmarkTextLimitSplit(b *testing.B) {
	text := strings.Repeat("A line of words, wörds and emoji 👍🏽 in a long answer.\n", 400) // ~23 KB
	for _, unit := range []connector.TextUnit{connector.TextUnitBytes, connector.TextUnitUTF16} {
		l := connector.TextLimit{Max: 4096, Unit: unit}
		b.Run([]string{"bytes", "utf16"}[unit], func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if len(l.Split(text)) == 0 {
					b.Fatal("no parts")
				}
			}
		})
	}
}

// BenchmarkTextLimitSplitBaseline is the same text as
// BenchmarkTextLimitSplit cut by the code TextLimit replaced in the
// Telegram connector (UTF-16 units counted on a []rune, a line break or a
// space in the second half; no graphemes, no fences): the baseline of the
// ratio.
func BenchmarkTextLimitSplitBaseline(b *testing.B) {
	text := strings.Repeat("A line of words, wörds and emoji 👍🏽 in a long answer.\n", 400)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if len(oldTelegramSplit(text, 4096)) == 0 {
			b.Fatal("no parts")
		}
	}
}

// oldTelegramSplit is connectors/telegram's splitText before TextLimit.
func oldTelegramSplit(text string, limit int) []string {
	var parts []string
	r := []rune(text)
	for len(r) > 0 {
		n, units := 0, 0
		for n < len(r) {
			u := utf16.RuneLen(r[n])
			if u < 0 {
				u = 1
			}
			if units+u > limit {
				break
			}
			units += u
			n++
		}
		cut := n
		if n < len(r) {
			for _, sep := range []rune{'\n', ' '} {
				if i := lastRune(r[:n], sep); i >= n/2 {
					cut = i + 1
					break
				}
			}
		}
		if part := string(r[:cut]); strings.TrimSpace(part) != "" {
			parts = append(parts, part)
		}
		r = r[cut:]
	}
	return parts
}

func lastRune(r []rune, x rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == x {
			return i
		}
	}
	return -1
}
