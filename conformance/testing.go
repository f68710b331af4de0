package conformance

import "testing"

// Run runs the suite against baseURL from a connector author's go test:
// each requirement becomes a subtest named by its ID. A failed MUST calls
// t.Error; a failed SHOULD is logged, or is an error when opts.Strict; a
// skipped requirement calls t.Skip with the reason. A run that cannot start
// (bad Base URL or pattern) is t.Fatal.
//
//	func TestConformance(t *testing.T) {
//		srv := httptest.NewServer(myConnector)
//		defer srv.Close()
//		conformance.Run(t, srv.URL, conformance.Options{APIKey: key})
//	}
func Run(t *testing.T, baseURL string, opts Options) {
	t.Helper()
	if opts.Out == nil {
		opts.Out = testWriter{t}
	}
	rep, err := Check(t.Context(), baseURL, opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	for _, res := range rep.Results {
		t.Run(res.ID, func(t *testing.T) {
			switch res.Status {
			case Skip:
				t.Skip(res.Reason)
			case Fail:
				msg := SectionTitle(res.Section) + " " + string(res.Level) + ": " + res.Statement +
					"\n  expected: " + res.Expected + "\n  actual:   " + res.Actual
				if res.Packet != "" {
					msg += "\n  packet:   " + res.Packet
				}
				if res.Level == Must || opts.Strict {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		})
	}
	t.Log(rep.Summary())
}

// testWriter sends progress output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
