package conformance_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"github.com/xconn/xconn/conformance"
)

func sampleReport(strict bool) *conformance.Report {
	return &conformance.Report{BaseURL: "http://127.0.0.1:1/x", Strict: strict, Results: []conformance.Result{
		{ID: "card.http", Section: "4.1", Level: conformance.Must, Statement: "s1", Status: conformance.Pass},
		{ID: "card.schema", Section: "4.1", Level: conformance.Must, Statement: "s2", Status: conformance.Fail, Expected: "e", Actual: "a", Packet: `{"p":1}`},
		{ID: "card.targets", Section: "4.1", Level: conformance.Should, Statement: "s3", Status: conformance.Fail, Expected: "e", Actual: "a"},
		{ID: "ws.subprotocol", Section: "6", Level: conformance.Must, Statement: "s4", Status: conformance.Skip, Reason: "why"},
	}}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport(false).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if last := lines[len(lines)-1]; last != "1 passed, 2 failed, 1 skipped" {
		t.Errorf("summary line %q", last)
	}
	if !regexp.MustCompile(`(?m)^FAIL MUST\s+card\.schema\s+s2 \(Common Protocol §4\.1\)\n\s+expected: e\n\s+actual:\s+a\n\s+packet:\s+\{"p":1\}$`).MatchString(b.String()) {
		t.Errorf("failure block missing:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "skipped:  why") {
		t.Errorf("skip reason missing:\n%s", b.String())
	}
}

func TestOKAndStrict(t *testing.T) {
	r := sampleReport(false)
	if r.OK() {
		t.Error("OK with a MUST failure")
	}
	r.Results[1].Status = conformance.Pass
	if !r.OK() {
		t.Error("not OK with only a SHOULD failure")
	}
	r.Strict = true
	if r.OK() {
		t.Error("OK in strict mode with a SHOULD failure")
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport(false).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Passed, Failed, Skipped int
		OK                      bool
		Results                 []conformance.Result
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Passed != 1 || doc.Failed != 2 || doc.Skipped != 1 || doc.OK || len(doc.Results) != 4 || doc.Results[1].Packet != `{"p":1}` {
		t.Errorf("decoded %+v", doc)
	}
}

func TestWriteJUnit(t *testing.T) {
	for _, strict := range []bool{false, true} {
		var b bytes.Buffer
		if err := sampleReport(strict).WriteJUnit(&b); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Suites   []struct {
				Name  string `xml:"name,attr"`
				Cases []struct {
					Name string `xml:"name,attr"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		wantFail, wantSkip := 1, 2
		if strict {
			wantFail, wantSkip = 2, 1
		}
		if doc.Tests != 4 || doc.Failures != wantFail || doc.Skipped != wantSkip || len(doc.Suites) != 2 {
			t.Errorf("strict=%v: tests %d failures %d skipped %d suites %d", strict, doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites))
		}
	}
}

func TestWriteMarkdownListsEveryID(t *testing.T) {
	var b bytes.Buffer
	reqs := conformance.Requirements()
	if err := conformance.WriteMarkdown(&b, reqs); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if !strings.Contains(b.String(), "| `"+r.ID+"` | "+string(r.Level)+" |") {
			t.Errorf("%s missing from the Markdown table", r.ID)
		}
	}
	if !strings.Contains(b.String(), "MUSTs not observable") {
		t.Error("non-observable table missing")
	}
	b.Reset()
	if err := conformance.WriteList(&b, reqs); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != len(reqs)+1 {
		t.Errorf("list has %d lines for %d requirements", n, len(reqs))
	}
}
