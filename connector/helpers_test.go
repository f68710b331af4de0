package connector_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode checks that env carries an envelope error with code.
func wantCode(t *testing.T, env *protocol.Envelope, typ string, code protocol.Code) {
	t.Helper()
	if env.Type != typ {
		t.Fatalf("type = %s, want %s (error %+v)", env.Type, typ, env.Error)
	}
	if env.Error == nil || env.Error.Code != string(code) {
		t.Fatalf("%s error = %+v, want code %s", typ, env.Error, code)
	}
}

func wantOK(t *testing.T, env *protocol.Envelope, typ string) {
	t.Helper()
	if env.Type != typ || env.Error != nil {
		t.Fatalf("got %s error %+v, want %s without error", env.Type, env.Error, typ)
	}
}

func decode[T any](t *testing.T, env *protocol.Envelope) T {
	t.Helper()
	var v T
	if err := env.DecodePayload(&v); err != nil {
		t.Fatalf("decode %s: %v", env.Type, err)
	}
	return v
}

// openSigned opens a new channel and signs it in with the token form.
func openSigned(t *testing.T, c *connectortest.Client) string {
	t.Helper()
	ctx := testCtx(t)
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	st, err := sdkfixture.SignIn(ctx, c, ack.ConnectorChannelID, "Ann")
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	if st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in status = %s", st.Status)
	}
	return ack.ConnectorChannelID
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isCode(err error, code protocol.Code) bool {
	return errors.Is(err, &protocol.Error{Code: code})
}

// checkWire validates every packet the connector sent to c against the
// official packet schema and the protocol rules.
func checkWire(t *testing.T, c *connectortest.Client) {
	t.Helper()
	for _, frame := range c.Transcript() {
		if _, vs := protocol.ValidatePacketJSON([]byte(frame), protocol.ToHost); len(vs) > 0 {
			t.Errorf("invalid packet from the connector: %v\n%s", vs, frame)
		}
	}
}

// metricValue returns the value of the unlabelled counter or gauge name
// of the fixture's registry (0 when it has none).
func metricValue(t *testing.T, f *sdkfixture.Fixture, name string) float64 {
	t.Helper()
	mfs, err := f.Server.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		m := mf.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return 0
}
