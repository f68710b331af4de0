package connector_test

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestHelloAdmitsNewerProtocolVersion: section 8.1 rejects only a hello that
// omits protocol_version or is below the supported version; hello negotiates
// nothing (section 12), so a newer xAgent is admitted and the ack carries the
// Connector's own version.
func TestHelloAdmitsNewerProtocolVersion(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	for _, v := range []string{"3.0", "3", "3.1", "4.0", "12.7"} {
		t.Run(v, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := connectortest.Dial(ctx, f.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ack, err := c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: v,
				SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}})
			if err != nil {
				t.Fatalf("hello with protocol_version %q: %v", v, err)
			}
			if ack.ProtocolVersion != protocol.ProtocolVersion || ack.ProtocolVersion != f.Server.Card().ProtocolVersion {
				t.Fatalf("hello.ack protocol_version = %q, want the Connector's own %q", ack.ProtocolVersion, protocol.ProtocolVersion)
			}
			if ack.ConnectorID == "" {
				t.Fatal("hello.ack without connector_id")
			}
			// The socket is usable: user-level packets are served.
			if _, err := c.Open(ctx, ""); err != nil {
				t.Fatalf("channel.open after a %s hello: %v", v, err)
			}
			checkWire(t, c)
		})
	}
}

// TestHelloRejectsMissingMalformedOrOlderVersion keeps the other half of
// section 8.1: missing, malformed and lower versions are refused with
// unsupported_protocol_version and close 1008.
func TestHelloRejectsMissingMalformedOrOlderVersion(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	for _, v := range []string{"", " ", "2.9", "2", "1.0", "0.9", "three", "3.x", "3.0.1", "-3.0", "v3.0", "4.", ".1"} {
		t.Run(v, func(t *testing.T) {
			ctx := testCtx(t)
			c, err := connectortest.Dial(ctx, f.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			env, err := c.Request(ctx, protocol.TypeHello, "", protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID,
				ProtocolVersion: v, SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}})
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, env, protocol.TypeError, protocol.CodeUnsupportedProtocolVersion)
			if st := c.CloseStatus(); st != websocket.StatusPolicyViolation {
				t.Errorf("close status = %v, want 1008", st)
			}
		})
	}
}
