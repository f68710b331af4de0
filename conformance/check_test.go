package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/internal/fixture"
	"github.com/xconn/xconn/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCorrectFixturePasses: a correct Connector passes every applicable
// requirement, MUST and SHOULD, and skips only what it does not declare.
func TestCorrectFixturePasses(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	rep := check(t, base, fullOptions(fx))
	if f := rep.Failed(); len(f) > 0 {
		var b bytes.Buffer
		_ = rep.WriteText(&b)
		t.Fatalf("failed: %v\n%s", f, b.String())
	}
	if !rep.OK() {
		t.Error("OK() = false for a run without failures")
	}
	wantSkipped := []string{"baseurl.prefix", "imv1.descriptor", "imv1.message-push", "device.descriptor"}
	var skipped []string
	for _, res := range rep.Results {
		if res.Status == conformance.Skip {
			skipped = append(skipped, res.ID)
		}
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("skipped %v, want %v", skipped, wantSkipped)
	}
	if len(rep.Results) != len(conformance.Requirements()) {
		t.Errorf("%d results for %d requirements", len(rep.Results), len(conformance.Requirements()))
	}
}

// TestBrokenFixtures: each deliberate violation fails exactly the
// requirements it breaks.
func TestBrokenFixtures(t *testing.T) {
	tests := []struct {
		brk  fixture.Breakage
		want []string
	}{
		{fixture.WrongErrorCodes, []string{"ws.hello-required-code", "ws.hello-card-id-mismatch-code", "ws.hello-connector-id-mismatch-code", "envelope.invalid-json-code",
			"envelope.channel-id-required-code", "envelope.unsupported-type", "channel.not-owned", "channel.unknown-code", "auth.unknown-session",
			"tool.unauthenticated-code", "imv2.channel-not-open"}},
		// A channel opened before hello has no connector_id, so its
		// Descriptor is invalid too.
		{fixture.AcceptBeforeHello, []string{"ws.first-packet-hello", "ws.hello-required-code", "descriptor.valid"}},
		{fixture.LeakSecret, []string{"security.no-secret-leak"}},
		{fixture.WrongHealthBuild, []string{"health.build"}},
		{fixture.NoSubprotocol, []string{"ws.subprotocol", "ws.subprotocol-required"}},
		{fixture.AcceptOldVersion, []string{"ws.hello-version-old"}},
		{fixture.RejectNewerVersion, []string{"ws.hello-version-newer"}},
		// Forgetting accepted messages loses both the duplicate and the
		// conflict answer.
		{fixture.NoDuplicate, []string{"imv2.ack-duplicate", "imv2.ack-conflict"}},
		{fixture.NoWSAPIKey, []string{"apikey.ws"}},
		{fixture.NoRedelivery, []string{"imv2.redelivery"}},
		{fixture.ForbiddenField, []string{"imv2.no-internal-fields"}},
		// The official schema constrains tool_id too.
		{fixture.BadToolID, []string{"card.json-schema", "card.tool-id-charset"}},
		{fixture.WrongDescChannel, []string{"descriptor.channel"}},
		{fixture.IgnoreProfiles, []string{"descriptor.profiles-negotiated"}},
		// A Card without an auth flow title fails the suite as it fails
		// protocol.ValidateCard; the official schema does not require it.
		{fixture.NoAuthFlowTitle, []string{"card.auth-flows"}},
		// Without the message its redelivery is not checked (skipped).
		{fixture.IgnoreInbound, []string{"imv2.inbound-delivered"}},
		{fixture.ReuseInboundID, []string{"imv2.inbound-message-id"}},
		{fixture.ResendAccepted, []string{"imv2.inbound-acked-not-resent"}},
		// Reissuing a channel id on reopen is allowed (section 8.3); a
		// wrong API key answered 401 is allowed (section 4.3).
		{fixture.ReissueChannels, nil},
		{fixture.Unauthorized401, nil},
		{fixture.ServeUnowned, []string{"channel.not-owned"}},
		{fixture.LogoutKeepsAuth, []string{"auth.logout"}},
		{fixture.BadDescriptorPush, []string{"descriptor.push"}},
		{fixture.ProgressAfterAck, []string{"tool.progress-push"}},
		{fixture.NoQRRefresh, []string{"auth.qr-refresh"}},
		{fixture.RehelloAccepted, []string{"ws.hello-connector-id-mismatch", "ws.hello-connector-id-mismatch-code"}},
		{fixture.ServeOtherChannel, []string{"transfer.download-other-channel"}},
		// Keyed by tool_call_id alone: the call without one runs twice
		// too, but the repeat of the keyed one is still answered.
		{fixture.NoToolIdempotency, []string{"tool.idempotency", "tool.idempotency-request-id"}},
		{fixture.NoRequestIDIdempotency, []string{"tool.idempotency-request-id"}},
		// The chat packets of the other checks carry no request_id, as in
		// IM v2's examples: only the one that sends one sees it dropped.
		{fixture.NoChatRequestID, []string{"envelope.request-id", "imv2.ack-request-id"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.brk), func(t *testing.T) {
			t.Parallel()
			fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey, Break: tt.brk})
			rep := check(t, base, fullOptions(fx))
			if got := rep.Failed(); !slices.Equal(got, tt.want) {
				t.Errorf("failed %v, want %v", got, tt.want)
			}
			for _, id := range tt.want {
				res, _ := rep.Result(id)
				if res.Expected == "" || res.Actual == "" {
					t.Errorf("%s: failure without expected/actual: %+v", id, res)
				}
			}
			if rep.OK() == slices.ContainsFunc(rep.Results, func(r conformance.Result) bool {
				return r.Status == conformance.Fail && r.Level == conformance.Must
			}) {
				t.Errorf("OK() = %v disagrees with the MUST failures", rep.OK())
			}
		})
	}
}

// TestSecretsNeverPrinted: a leaked secret is reported, but every report
// format redacts it.
func TestSecretsNeverPrinted(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey, Break: fixture.LeakSecret})
	opts := formOptions()
	rep := check(t, base, opts)
	res, _ := rep.Result("security.no-secret-leak")
	if res.Status != conformance.Fail || !strings.Contains(res.Packet, "[redacted]") {
		t.Fatalf("leak result %+v, want a failure quoting a redacted packet", res)
	}
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	_ = rep.WriteJSON(&b)
	_ = rep.WriteJUnit(&b)
	for _, secret := range []string{testKey, opts.AuthInput["access_code"]} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("a report contains the secret %q", secret)
		}
	}
}

// TestPathPrefix: a Connector under a path prefix passes, including
// baseurl.prefix and the relative download_url of its inbound file.
func TestPathPrefix(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey, Prefix: "/connectors/fx"})
	rep := check(t, base+"/", formOptions())
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	for _, id := range []string{"baseurl.prefix", "transfer.download", "imv2.redelivery"} {
		if res, _ := rep.Result(id); res.Status != conformance.Pass {
			t.Errorf("%s: %s %s", id, res.Status, res.Reason)
		}
	}
}

// TestQRFlowByURL signs in with the QR flow by confirming its URL.
func TestQRFlowByURL(t *testing.T) {
	base := startFixture(t, fixture.Options{})
	var out bytes.Buffer
	rep := check(t, base, conformance.Options{AuthFlow: fixture.QRFlow, AuthOpenURL: true, Out: &out, Timeout: testTimeout})
	if res, _ := rep.Result("auth.authenticated"); res.Status != conformance.Pass {
		t.Fatalf("auth.authenticated: %+v\n%s", res, out.String())
	}
	if res, _ := rep.Result("imv2.ack-accepted"); res.Status != conformance.Pass {
		t.Errorf("imv2.ack-accepted after QR sign-in: %+v", res)
	}
	if !strings.Contains(out.String(), "POST QR URL: HTTP 200") {
		t.Errorf("progress output %q does not show the QR confirmation", out.String())
	}
}

// TestSkipsWithReasons: without an auth flow the suite skips what it
// cannot reach and says why.
func TestSkipsWithReasons(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey})
	rep := check(t, base, conformance.Options{APIKey: testKey, Timeout: testTimeout})
	tests := map[string]string{
		"auth.authenticated":            "no auth flow selected",
		"imv2.ack-accepted":             "no signed-in channel",
		"imv2.redelivery":               "published no chat.message",
		"imv2.inbound-acked-not-resent": "Options.Inbound",
		"imv2.inbound-delivered":        "no Options.Inbound hook",
		"tool.invoke":                   "no tool selected",
	}
	for id, reason := range tests {
		res, _ := rep.Result(id)
		if res.Status != conformance.Skip || !strings.Contains(res.Reason, reason) {
			t.Errorf("%s: %s %q, want skip containing %q", id, res.Status, res.Reason, reason)
		}
	}
}

// TestPreflight: nothing listening, a missing API key and a wrong one each
// stop the run with one sentence (a *PreflightError) and no report.
func TestPreflight(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, base, key, want string
	}{
		{"nothing listening", dead, "", "Nothing answers at " + dead},
		{"no key", base, "", "requires an API key"},
		{"wrong key", base, "not-the-key", "refused the API key (GET /health answered HTTP 403)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := conformance.Check(context.Background(), tc.base, conformance.Options{APIKey: tc.key, Timeout: testTimeout})
			var pe *conformance.PreflightError
			if rep != nil || !errors.As(err, &pe) {
				t.Fatalf("Check = %v, %v; want no report and a *PreflightError", rep, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") > 0 || strings.Count(msg, ". ") > 0 || !strings.HasSuffix(msg, ".") {
				t.Errorf("error %q: want one sentence containing %q", msg, tc.want)
			}
			if tc.key != "" && strings.Contains(msg, tc.key) {
				t.Errorf("error %q repeats the key", msg)
			}
		})
	}
}

// TestUnreachable: a Base URL nobody serves fails card.http and skips the
// rest; Check itself does not fail.
func TestUnreachable(t *testing.T) {
	base := startFixture(t, fixture.Options{})
	rep := check(t, base+"/nothing-here", conformance.Options{Timeout: testTimeout})
	if got := rep.Failed(); !slices.Contains(got, "card.http") {
		t.Errorf("failed %v, want card.http among them", got)
	}
	if rep.OK() {
		t.Error("OK() for a Connector without a Card")
	}
}

func TestOnlyAndSkip(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey})
	opts := formOptions()
	opts.Only = []string{"imv2.*", "ws.hello-ack"}
	opts.Skip = []string{"imv2.redelivery"}
	rep := check(t, base, opts)
	for _, res := range rep.Results {
		if !(strings.HasPrefix(res.ID, "imv2.") || res.ID == "ws.hello-ack") || res.ID == "imv2.redelivery" {
			t.Errorf("unexpected result %s", res.ID)
		}
		if res.Status == conformance.Fail {
			t.Errorf("%s failed: %s / %s", res.ID, res.Expected, res.Actual)
		}
	}
	if res, ok := rep.Result("imv2.ack-duplicate"); !ok || res.Status != conformance.Pass {
		t.Errorf("imv2.ack-duplicate selected alone: %+v", res)
	}
	if _, err := conformance.Check(context.Background(), base, conformance.Options{Only: []string{"["}}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, u := range []string{"ftp://example.com", "http://", "http://u:p@example.com", "http://example.com/?q=1", "http://example.com/#f"} {
		if _, err := conformance.Check(context.Background(), u, conformance.Options{}); err == nil {
			t.Errorf("Check(%q) accepted the Base URL", u)
		}
	}
}

func TestRunAgainstFixture(t *testing.T) {
	base := startFixture(t, fixture.Options{APIKey: testKey})
	conformance.Run(t, base, formOptions())
}

// TestQRFlowTerminal: without --auth-open-url the suite shows the QR code and
// waits; nobody scans it here, so sign-in fails after QRWait.
func TestQRFlowTerminal(t *testing.T) {
	base := startFixture(t, fixture.Options{})
	var out bytes.Buffer
	opts := conformance.Options{AuthFlow: fixture.QRFlow, QRWait: 300 * time.Millisecond, Out: &out, Timeout: testTimeout,
		Only: []string{"auth.authenticated"}}
	rep := check(t, base, opts)
	res, _ := rep.Result("auth.authenticated")
	if res.Status != conformance.Fail || !strings.Contains(res.Actual, "pending") {
		t.Errorf("auth.authenticated = %+v, want a failure while pending", res)
	}
	if !strings.Contains(out.String(), "Scan this QR code") || !strings.Contains(out.String(), "█") {
		t.Errorf("no QR code shown:\n%s", out.String())
	}
}

// TestWithoutSignIn: a Connector without an API key, checked without an auth
// flow, passes everything that needs no sign-in and skips the rest.
func TestWithoutSignIn(t *testing.T) {
	base := startFixture(t, fixture.Options{})
	rep := check(t, base, conformance.Options{Timeout: testTimeout})
	if f := rep.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	for _, id := range []string{"imv2.final-with-file", "tool.invoke", "imv2.ack-accepted", "apikey.ws"} {
		if res, _ := rep.Result(id); res.Status != conformance.Skip || res.Reason == "" {
			t.Errorf("%s: %s %q, want a skip with a reason", id, res.Status, res.Reason)
		}
	}
	if res, _ := rep.Result("transfer.upload"); res.Status != conformance.Pass {
		t.Errorf("transfer.upload on a created channel: %+v", res)
	}
}

// TestCardWithoutTitleFailsBoth: a served Card whose auth flow has no title
// fails card.auth-flows with the very line protocol.ValidateCard reports.
func TestCardWithoutTitleFailsBoth(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{Break: fixture.NoAuthFlowTitle})
	rep := check(t, base, conformance.Options{Only: []string{"card.*"}, Timeout: testTimeout})
	const want = "auth_flows[1].title: is required"
	card := fx.Card()
	if vs := protocol.ValidateCard(&card); vs.Error() != want {
		t.Errorf("protocol.ValidateCard: %v, want %q", vs, want)
	}
	res, _ := rep.Result("card.auth-flows")
	if res.Status != conformance.Fail || res.Actual != want || res.Level != conformance.Must {
		t.Errorf("card.auth-flows: %+v, want a MUST failure with %q", res, want)
	}
	if got := rep.Failed(); !slices.Equal(got, []string{"card.auth-flows"}) || rep.OK() {
		t.Errorf("failed %v (OK %v), want only card.auth-flows", got, rep.OK())
	}
}

// TestLegacyPeer is the "Done when" of a 1.0 peer (no protocol_version, a v1
// Descriptor, reissued channel ids, no upload endpoint): the headline names
// 1.0 in every format, no check passes on a missing value, nothing is
// skipped in a cascade, and every verdict cites its section.
func TestLegacyPeer(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey, Break: fixture.Legacy10})
	_ = fx
	rep := check(t, base, formOptions())
	var text, js, junit bytes.Buffer
	_ = rep.WriteText(&text)
	_ = rep.WriteJSON(&js)
	_ = rep.WriteJUnit(&junit)
	first, _, _ := strings.Cut(text.String(), "\n")
	if !strings.Contains(first, "protocol 1.0") || !strings.Contains(first, "outside the [3.0, 3.0] window") {
		t.Errorf("text headline %q does not name 1.0 outside the window", first)
	}
	if rep.ProtocolVersion != "1.0" || !strings.Contains(js.String(), `"headline": "This Connector speaks protocol 1.0`) ||
		!strings.Contains(junit.String(), "This Connector speaks protocol 1.0") {
		t.Errorf("JSON or JUnit lacks the headline:\n%s", junit.String())
	}
	// Version comparisons fail on missing values instead of passing.
	for _, id := range []string{"version.window", "card.protocol-version", "health.protocol-version", "ws.hello-ack"} {
		if res, _ := rep.Result(id); res.Status != conformance.Fail {
			t.Errorf("%s: %s %s, want fail", id, res.Status, res.Reason)
		}
	}
	// The 3.0 hello rules do not apply to it and say why.
	for _, id := range []string{"ws.hello-version-missing", "ws.hello-version-old", "ws.hello-profiles-required"} {
		if res, _ := rep.Result(id); res.Status != conformance.Skip || !strings.Contains(res.Reason, "protocol 1.0") {
			t.Errorf("%s: %s %q, want a skip naming 1.0", id, res.Status, res.Reason)
		}
	}
	// The reissued channel is adopted and reported; no cascade follows.
	if res, _ := rep.Result("channel.reuse"); res.Status != conformance.Pass || !strings.Contains(res.Note, "reissued") {
		t.Errorf("channel.reuse: %+v", res)
	}
	for _, res := range rep.Results {
		if res.Status == conformance.Skip && (strings.Contains(res.Reason, "ended early") || strings.Contains(res.Reason, "see ws.hello-ack and channel.open-new")) {
			t.Errorf("%s skipped in a cascade: %s", res.ID, res.Reason)
		}
		if res.Section == "" {
			t.Errorf("%s cites no section", res.ID)
		}
	}
	// The v1 Descriptor is reported once, by its own rule, and judged by
	// the v1 normalisation otherwise.
	if res, _ := rep.Result("descriptor.schema-v2"); res.Status != conformance.Fail {
		t.Errorf("descriptor.schema-v2: %+v", res)
	}
	for _, id := range []string{"descriptor.valid", "imv1.descriptor", "imv1.message-push", "transfer.download", "auth.authenticated"} {
		if res, _ := rep.Result(id); res.Status != conformance.Pass {
			t.Errorf("%s: %s %s %s", id, res.Status, res.Actual, res.Reason)
		}
	}
	if res, _ := rep.Result("transfer.upload"); res.Status != conformance.Skip || !strings.Contains(res.Reason, "does not serve POST /files/uploads") {
		t.Errorf("transfer.upload: %+v", res)
	}
	if t.Failed() {
		t.Log(text.String())
	}
}

// TestSignedTokensRedacted: the sig= of a published download_url and the
// QR code are in no report format, even when a download fails.
func TestSignedTokensRedacted(t *testing.T) {
	_, base := startFixtureServer(t, fixture.Options{Break: fixture.Legacy10})
	var out bytes.Buffer
	rep := check(t, base, conformance.Options{AuthFlow: fixture.QRFlow, AuthOpenURL: true, Out: &out, Timeout: testTimeout})
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	_ = rep.WriteJSON(&b)
	_ = rep.WriteJUnit(&b)
	for _, leak := range []string{"fxsig", "/qr/auth_fx_"} {
		if strings.Contains(b.String(), leak) {
			t.Errorf("a report contains a live token %q", leak)
		}
	}
	if !strings.Contains(b.String(), "[redacted]") {
		t.Log("no token was quoted at all")
	}
}

// TestCloseFrames: every connection the suite opened ends with a close
// frame (status 1000), not a dropped TCP connection.
func TestCloseFrames(t *testing.T) {
	fx, base := startFixtureServer(t, fixture.Options{APIKey: testKey})
	check(t, base, fullOptions(fx))
	deadline := time.Now().Add(2 * time.Second)
	for len(fx.CloseStatuses()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := fx.CloseStatuses()
	if len(got) == 0 {
		t.Fatal("no connection ended")
	}
	for i, st := range got {
		if st != 1000 {
			t.Errorf("connection %d ended with close status %d, want 1000 (normal closure)", i, st)
		}
	}
}
