package conformance_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/internal/fixture"
)

const (
	testKey     = "fixture-api-key-0123456789"
	testTimeout = 2 * time.Second
)

// startFixture serves a fixture Connector on loopback and returns its Base
// URL; the server is closed when the test ends.
func startFixture(t *testing.T, opts fixture.Options) string {
	t.Helper()
	_, base := startFixtureServer(t, opts)
	return base
}

// startFixtureServer is startFixture that also returns the fixture, for
// its Inbound hook and its state after a run.
func startFixtureServer(t *testing.T, opts fixture.Options) (*fixture.Server, string) {
	t.Helper()
	fx := fixture.New(opts)
	srv := httptest.NewServer(fx)
	base := srv.URL + opts.Prefix
	fx.SetBaseURL(base)
	t.Cleanup(func() {
		fx.Close()
		srv.Close()
	})
	return fx, base
}

// fixtureToolArgs are the arguments the tests give the fixture's echo tool.
const fixtureToolArgs = `{"text":"xconn conformance check"}`

// fullOptions are formOptions that also let every applicable check run:
// the Inbound hook asks the fixture for a message from its target, and the
// fixture's echo tool is selected with its arguments.
func fullOptions(fx *fixture.Server) conformance.Options {
	o := formOptions()
	o.Inbound = func(_ context.Context, ch string) error { return fx.SendInbound(ch, "hello from the target") }
	o.Tool = fixture.ToolID
	o.ToolArgs = json.RawMessage(fixtureToolArgs)
	return o
}

// formOptions are run options that sign in with the fixture's form flow.
func formOptions() conformance.Options {
	return conformance.Options{
		APIKey:    testKey,
		AuthFlow:  fixture.FormFlow,
		AuthInput: map[string]string{"room": "lobby", "access_code": "s3cret-code"},
		Timeout:   testTimeout,
	}
}

func check(t *testing.T, base string, opts conformance.Options) *conformance.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := conformance.Check(ctx, base, opts)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}
