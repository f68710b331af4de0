package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/internal/fixture"
)

// inboundIDs are the requirements the Inbound hook lets run.
var inboundIDs = []string{"imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.redelivery", "imv2.inbound-acked-not-resent"}

// TestInboundHook: with Options.Inbound the suite asks the target for
// messages on the signed-in channel, and the inbound and redelivery checks
// pass on them; the hook is called twice, with that channel.
func TestInboundHook(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	opts := formOptions()
	var (
		mu    sync.Mutex
		calls []string
	)
	opts.Inbound = func(ctx context.Context, ch string) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("Inbound called without a deadline")
		}
		mu.Lock()
		calls = append(calls, ch)
		mu.Unlock()
		return fx.SendInbound(ch, "hello from the target")
	}
	rep := check(t, base, opts)
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	for _, id := range append(slices.Clone(inboundIDs), "imv2.inbound-valid") {
		if res, _ := rep.Result(id); res.Status != conformance.Pass {
			t.Errorf("%s: %s %q, want pass", id, res.Status, res.Reason)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || calls[0] == "" || calls[0] != calls[1] {
		t.Errorf("Inbound called with %q, want twice with the signed-in channel", calls)
	}
	// That channel is the one the run signed in (and out again).
	if out := fx.LoggedOut(); !slices.Contains(out, calls[0]) {
		t.Errorf("hook channel %s is not the signed-in channel (signed out: %v)", calls[0], out)
	}
}

// TestInboundHookOnly: selected alone, each inbound requirement still runs
// with the hook and passes.
func TestInboundHookOnly(t *testing.T) {
	for _, id := range inboundIDs {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
			opts := fullOptions(fx)
			opts.Only = []string{id}
			rep := check(t, base, opts)
			if res, _ := rep.Result(id); res.Status != conformance.Pass {
				t.Errorf("%s: %s %q %s", id, res.Status, res.Reason, res.Actual)
			}
		})
	}
}

// TestInboundHookError: a failing hook is not the Connector's fault: the
// checks that needed its message are skipped with the hook's error.
func TestInboundHookError(t *testing.T) {
	_, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	opts := formOptions()
	opts.Inbound = func(context.Context, string) error { return errors.New("fake target is down") }
	rep := check(t, base, opts)
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	for _, id := range []string{"imv2.inbound-delivered", "imv2.inbound-message-id", "imv2.redelivery"} {
		res, _ := rep.Result(id)
		if res.Status != conformance.Skip || !strings.Contains(res.Reason, "Options.Inbound: fake target is down") {
			t.Errorf("%s: %s %q, want a skip with the hook's error", id, res.Status, res.Reason)
		}
	}
}

// TestWithoutHookAndTool: without Options.Inbound and Options.Tool the
// checks that need them are skipped and say what they need; the rest of a
// signed-in run passes.
func TestWithoutHookAndTool(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	rep := check(t, base, formOptions())
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	reasons := map[string]string{
		"imv2.inbound-delivered":  "no Options.Inbound hook",
		"imv2.inbound-message-id": "no Options.Inbound hook",
		"tool.invoke":             "invokes none with invented arguments",
	}
	for id, want := range reasons {
		res, _ := rep.Result(id)
		if res.Status != conformance.Skip || !strings.Contains(res.Reason, want) {
			t.Errorf("%s: %s %q, want a skip containing %q", id, res.Status, res.Reason, want)
		}
	}
	// The fixture publishes one message on its own after sign-in: the
	// redelivery checks run on it.
	for _, id := range []string{"imv2.redelivery", "imv2.inbound-acked-not-resent"} {
		if res, _ := rep.Result(id); res.Status != conformance.Pass {
			t.Errorf("%s: %s %q", id, res.Status, res.Reason)
		}
	}
	// No tool ran on a signed-in channel, and the one invocation on a
	// channel that is not signed in carried no invented argument.
	for _, inv := range fx.Invocations() {
		if inv.SignedIn {
			t.Errorf("tool %s invoked on a signed-in channel with %s", inv.ToolID, inv.Arguments)
		}
		if want := `{"connector_channel_id":"` + inv.Channel + `"}`; string(inv.Arguments) != want {
			t.Errorf("tool %s invoked with %s, want only %s", inv.ToolID, inv.Arguments, want)
		}
	}
}

// TestToolOption: with Options.Tool the suite invokes that tool once on the
// signed-in channel with Options.ToolArgs, connector_channel_id set to that
// channel, and repeats that call once (same tool_call_id) for
// tool.idempotency, and makes one more call without context and repeats it
// (same request_id) for tool.idempotency-request-id, only when they are
// selected; a tool the Card lacks is a skip.
func TestToolOption(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	opts := formOptions()
	opts.Tool = fixture.ToolID
	opts.ToolArgs = json.RawMessage(`{"text":"from the caller","connector_channel_id":"cch_not_this_one"}`)
	rep := check(t, base, opts)
	if res, _ := rep.Result("tool.invoke"); res.Status != conformance.Pass {
		t.Fatalf("tool.invoke: %+v", res)
	}
	var signedIn []fixture.Invocation
	for _, inv := range fx.Invocations() {
		var args map[string]string
		if err := json.Unmarshal(inv.Arguments, &args); err != nil {
			t.Fatalf("arguments %s: %v", inv.Arguments, err)
		}
		if args["text"] != "from the caller" || args["connector_channel_id"] != inv.Channel || len(args) != 2 {
			t.Errorf("invoked with %s on channel %s, want the given arguments on that channel", inv.Arguments, inv.Channel)
		}
		if inv.SignedIn {
			signedIn = append(signedIn, inv)
		}
	}
	// The call and its repeat (tool.idempotency), then the call without
	// context and its repeat (tool.idempotency-request-id).
	if len(signedIn) != 4 || slices.ContainsFunc(signedIn, func(inv fixture.Invocation) bool {
		return inv.ToolID != fixture.ToolID || string(inv.Arguments) != string(signedIn[0].Arguments)
	}) {
		t.Errorf("signed-in invocations %+v, want two calls of %s, each with its repeat", signedIn, fixture.ToolID)
	}
	for _, id := range []string{"tool.idempotency", "tool.idempotency-request-id"} {
		if res, _ := rep.Result(id); res.Status != conformance.Pass {
			t.Errorf("%s: %+v", id, res)
		}
	}

	fx2, base2 := startFixtureServer(t, fixture.Options{APIKey: testKey})
	opts.Skip = []string{"tool.idempotency*"}
	check(t, base2, opts)
	signedIn = nil
	for _, inv := range fx2.Invocations() {
		if inv.SignedIn {
			signedIn = append(signedIn, inv)
		}
	}
	if len(signedIn) != 1 {
		t.Errorf("without tool.idempotency: signed-in invocations %+v, want exactly one", signedIn)
	}
	opts.Skip = nil

	opts.Tool = "no_such_tool"
	opts.ToolArgs = nil
	opts.Only = []string{"tool.*"}
	rep = check(t, base, opts)
	if res, _ := rep.Result("tool.invoke"); res.Status != conformance.Skip || !strings.Contains(res.Reason, "declares no tool no_such_tool") {
		t.Errorf("tool.invoke with an unknown tool: %+v", res)
	}
	if f := rep.Failed(); len(f) > 0 {
		t.Errorf("failed: %v", f)
	}
}

// TestToolOptionErrors: ToolArgs must be a JSON object and need a Tool; a
// run with bad ones does not start.
func TestToolOptionErrors(t *testing.T) {
	for _, o := range []conformance.Options{
		{Tool: "x", ToolArgs: json.RawMessage(`[1]`)},
		{Tool: "x", ToolArgs: json.RawMessage(`{"a":`)},
		{Tool: "x", ToolArgs: json.RawMessage(`null`)},
		{ToolArgs: json.RawMessage(`{}`)},
	} {
		if _, err := conformance.Check(context.Background(), "http://127.0.0.1:1", o); err == nil || !strings.Contains(err.Error(), "ToolArgs") {
			t.Errorf("Check with Tool %q ToolArgs %s: err %v, want a ToolArgs error", o.Tool, o.ToolArgs, err)
		}
	}
}

// TestSignOutAtEnd: the suite signs its channel out when it ends, whether
// the run passes, fails, or is canceled in the middle.
func TestSignOutAtEnd(t *testing.T) {
	t.Run("pass", func(t *testing.T) {
		fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
		var out bytes.Buffer
		opts := fullOptions(fx)
		opts.Out = &out
		rep := check(t, base, opts)
		if !rep.OK() {
			t.Fatalf("failed: %v", rep.Failed())
		}
		assertSignedOut(t, fx)
		if ch := fx.LoggedOut(); len(ch) == 0 || !strings.Contains(out.String(), "signed channel "+ch[0]+" out") {
			t.Errorf("progress output does not report the sign-out:\n%s", out.String())
		}
	})
	t.Run("MUST failure", func(t *testing.T) {
		fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey, Break: fixture.WrongHealthBuild})
		rep := check(t, base, formOptions())
		if rep.OK() {
			t.Fatal("a broken fixture passed")
		}
		assertSignedOut(t, fx)
	})
	t.Run("canceled", func(t *testing.T) {
		fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		opts := formOptions()
		opts.Inbound = func(context.Context, string) error {
			cancel() // the run is canceled while the channel is signed in
			return errors.New("canceled")
		}
		start := time.Now()
		if _, err := conformance.Check(ctx, base, opts); !errors.Is(err, context.Canceled) {
			t.Fatalf("Check: %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("a canceled run took %v", d)
		}
		assertSignedOut(t, fx)
	})
	t.Run("not signed in", func(t *testing.T) {
		fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
		_ = check(t, base, conformance.Options{APIKey: testKey, Timeout: testTimeout})
		if out := fx.LoggedOut(); len(out) > 0 {
			t.Errorf("auth.logout sent for %v without a sign-in", out)
		}
	})
}

func assertSignedOut(t *testing.T, fx *fixture.Server) {
	t.Helper()
	if in := fx.SignedIn(); len(in) > 0 {
		t.Errorf("channels still signed in after the run: %v", in)
	}
	if out := fx.LoggedOut(); len(out) != 1 {
		t.Errorf("channels signed out with auth.logout: %v, want one", out)
	}
}
