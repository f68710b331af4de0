package sdkfixture_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFixtureRoundTrip(t *testing.T) {
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, id := f.Connect(t, "")
	if id == "" {
		t.Fatal("no connector_id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := sdkfixture.SignIn(ctx, c, ack.ConnectorChannelID, "Ann")
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign in %v %+v", err, st)
	}
	if len(c.Transcript()) < 3 {
		t.Fatalf("transcript %v", c.Transcript())
	}
}
