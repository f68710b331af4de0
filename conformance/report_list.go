package conformance

import (
	"fmt"
	"io"
	"strings"
)

// WriteList writes reqs one per line (ID, level, capability, section and
// statement): the dry run of xconn check --list.
func WriteList(w io.Writer, reqs []Requirement) error {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%-36s %-6s %-26s %-18s %s\n", r.ID, r.Level, r.Capability, SectionTitle(r.Section), r.Statement)
	}
	fmt.Fprintf(&b, "%d requirements\n", len(reqs))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes reqs as Markdown tables of requirement IDs grouped by
// section, followed by the table of MUSTs that are not observable on the
// wire: the output of xconn check --list --markdown.
func WriteMarkdown(w io.Writer, reqs []Requirement) error {
	if err := WriteRequirementTables(w, reqs); err != nil {
		return err
	}
	return WriteNonObservable(w, NonObservable())
}

// WriteRequirementTables writes reqs as Markdown tables of requirement IDs
// grouped by section, Common Protocol sections first.
func WriteRequirementTables(w io.Writer, reqs []Requirement) error {
	var b strings.Builder
	for _, sec := range sections(reqs) {
		fmt.Fprintf(&b, "### %s\n\n| ID | Level | Needs | Requirement |\n|---|---|---|---|\n", SectionTitle(sec))
		for _, r := range reqs {
			if r.Section == sec {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Level, r.Capability, mdEscape(r.Statement))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteNonObservable writes the Markdown table of MUSTs that are not
// observable on the wire.
func WriteNonObservable(w io.Writer, rules []NonObservableRule) error {
	var b strings.Builder
	b.WriteString("### MUSTs not observable on the wire\n\n| Section | Requirement | Why |\n|---|---|---|\n")
	for _, n := range rules {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", SectionTitle(n.Section), mdEscape(n.Statement), mdEscape(n.Reason))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// SectionTitle names a requirement section for people: a bare number is a
// section of the Common Protocol ("4.1" -> "Common Protocol §4.1"); Profile
// sections already carry their document ("IM v2 §7").
func SectionTitle(section string) string {
	if section != "" && section[0] >= '0' && section[0] <= '9' {
		return "Common Protocol §" + section
	}
	return section
}
