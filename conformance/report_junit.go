package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: one testsuite per spec section,
// one testcase per requirement. A SHOULD failure is a JUnit failure only in
// strict mode; otherwise it is reported as skipped with its finding.
func (r *Report) WriteJUnit(w io.Writer) error {
	doc := junitSuites{Name: "xconn conformance " + r.BaseURL}
	if r.Headline != "" {
		doc.Name += ": " + r.Headline
	}
	index := map[string]int{}
	for _, res := range r.Results {
		i, ok := index[res.Section]
		if !ok {
			i = len(doc.Suites)
			index[res.Section] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: SectionTitle(res.Section)})
			if i == 0 && r.Headline != "" {
				doc.Suites[0].Properties = &junitProperties{Property: []junitProperty{
					{Name: "headline", Value: r.Headline}, {Name: "protocol_version", Value: r.ProtocolVersion}}}
			}
		}
		s := &doc.Suites[i]
		c := junitCase{Name: res.ID + " (" + string(res.Level) + ")", ClassName: "conformance." + res.Section}
		switch {
		case res.Status == Fail && (res.Level == Must || r.Strict):
			c.Failure = &junitFailure{Message: res.Statement, Type: string(res.Level),
				Body: fmt.Sprintf("expected: %s\nactual: %s\npacket: %s", res.Expected, res.Actual, res.Packet)}
			s.Failures++
			doc.Failures++
		case res.Status == Fail:
			c.Skipped = &junitSkipped{Message: "SHOULD not met: expected " + res.Expected + ", actual " + res.Actual}
			s.Skipped++
			doc.Skipped++
		case res.Status == Skip:
			c.Skipped = &junitSkipped{Message: res.Reason}
			s.Skipped++
			doc.Skipped++
		}
		if res.Note != "" {
			c.SystemOut = "note: " + res.Note
		}
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("conformance: write JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("conformance: write JUnit report: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
