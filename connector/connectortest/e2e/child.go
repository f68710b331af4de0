package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
)

// childEnv carries a childConfig (JSON) to the child process of the crash
// scenario: the test binary run again for the one test that called Run.
const childEnv = "XCONN_E2E_CHILD"

// childConfig is what the child process serves the connector with. The
// listener is its file descriptor 3.
type childConfig struct {
	Test    string `json:"test"`
	DataDir string `json:"data_dir"`
	Fake    string `json:"fake"`
	URL     string `json:"url"`
	APIKey  string `json:"api_key"`
}

// childOf returns the configuration of this process when it is the crash
// scenario's child for the test named test.
func childOf(test string) (childConfig, bool) {
	v := os.Getenv(childEnv)
	if v == "" {
		return childConfig{}, false
	}
	var c childConfig
	if json.Unmarshal([]byte(v), &c) != nil || c.Test != test {
		return childConfig{}, false
	}
	return c, true
}

// runPattern is the -test.run pattern that selects exactly the test (or
// subtest) named test.
func runPattern(test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
