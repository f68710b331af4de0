package connector_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(streamChildEnv); spec != "" {
		os.Exit(streamChild(spec)) // a connector killed by a test
	}
	goleak.VerifyTestMain(m)
}
