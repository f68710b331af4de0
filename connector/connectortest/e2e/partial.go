package e2e

import "strings"

// partialOf returns whether a text is a proper, non-empty beginning of
// answer: what a streamed answer shows before its final.
func partialOf(answer string) func(string) bool {
	return func(s string) bool { return s != "" && s != answer && strings.HasPrefix(answer, s) }
}

// longestPartial returns the longest text of posted that is a partial
// answer, or "".
func longestPartial(posted []string, answer string) string {
	longest := ""
	for _, s := range posted {
		if partialOf(answer)(s) && len(s) > len(longest) {
			longest = s
		}
	}
	return longest
}
