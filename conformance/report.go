package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is the outcome of one requirement.
type Status string

// Statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is the outcome of one requirement in one run. For a failure,
// Expected and Actual say what differed and Packet quotes the packet or HTTP
// exchange that showed it, with secrets redacted.
type Result struct {
	ID        string `json:"id"`
	Section   string `json:"section"`
	Level     Level  `json:"level"`
	Statement string `json:"statement"`
	Status    Status `json:"status"`
	Expected  string `json:"expected,omitempty"`
	Actual    string `json:"actual,omitempty"`
	Packet    string `json:"packet,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Note is what the suite adapted to while deciding, such as a channel
	// id the Connector reissued on reopen (section 8.3) and the suite
	// adopted.
	Note string `json:"note,omitempty"`
}

// Report is the outcome of one run, in registry order. It is not safe for
// concurrent mutation; reading it concurrently is fine.
type Report struct {
	BaseURL string `json:"base_url"`
	// ProtocolVersion is the protocol version the Connector speaks, as the
	// version verdict (version.window) read it: "1.0" for a missing
	// protocol_version (section 12); "" when it could not be read.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// Headline is the version verdict in one sentence, written first by
	// every report format.
	Headline string   `json:"headline,omitempty"`
	Strict   bool     `json:"strict"`
	Results  []Result `json:"results"`
}

// Counts returns the number of passed, failed and skipped results.
func (r *Report) Counts() (passed, failed, skipped int) {
	for _, res := range r.Results {
		switch res.Status {
		case Pass:
			passed++
		case Fail:
			failed++
		default:
			skipped++
		}
	}
	return passed, failed, skipped
}

// OK reports whether every MUST passed (and every SHOULD, when Strict).
func (r *Report) OK() bool {
	for _, res := range r.Results {
		if res.Status == Fail && (res.Level == Must || r.Strict) {
			return false
		}
	}
	return true
}

// Result returns the result of requirement id, or false.
func (r *Report) Result(id string) (Result, bool) {
	for _, res := range r.Results {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// Failed returns the IDs of the failed results, MUST and SHOULD alike.
func (r *Report) Failed() []string {
	var ids []string
	for _, res := range r.Results {
		if res.Status == Fail {
			ids = append(ids, res.ID)
		}
	}
	return ids
}

// Summary returns the summary line "N passed, N failed, N skipped".
func (r *Report) Summary() string {
	p, f, s := r.Counts()
	return fmt.Sprintf("%d passed, %d failed, %d skipped", p, f, s)
}

// WriteText writes the headline, then one line per result, citing its
// section (with expected, actual and packet
// lines under a failure) and the summary line last.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Headline != "" {
		b.WriteString(r.Headline)
		b.WriteByte('\n')
	}
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-4s %-6s %-36s %s (%s)\n", strings.ToUpper(string(res.Status)), res.Level, res.ID, res.Statement, SectionTitle(res.Section))
		if res.Note != "" {
			fmt.Fprintf(&b, "     note:     %s\n", res.Note)
		}
		switch res.Status {
		case Fail:
			fmt.Fprintf(&b, "     expected: %s\n     actual:   %s\n", res.Expected, res.Actual)
			if res.Packet != "" {
				fmt.Fprintf(&b, "     packet:   %s\n", res.Packet)
			}
		case Skip:
			fmt.Fprintf(&b, "     skipped:  %s\n", res.Reason)
		}
	}
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one indented JSON object with a summary.
func (r *Report) WriteJSON(w io.Writer) error {
	p, f, s := r.Counts()
	doc := struct {
		*Report
		Passed  int  `json:"passed"`
		Failed  int  `json:"failed"`
		Skipped int  `json:"skipped"`
		OK      bool `json:"ok"`
	}{r, p, f, s, r.OK()}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("conformance: write JSON report: %w", err)
	}
	return nil
}
