package host

import (
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/testrig/sdkfixture"
)

// BenchmarkInvokeSDK measures Host.Invoke against the connector SDK over a
// real socket, with calls in flight from many goroutines (the shape of
// xconn bench --scenario invoke). Profile the allocations of both sides
// with
//
//	go test -run '^$' -bench InvokeSDK -memprofile mem.out ./host
func BenchmarkInvokeSDK(b *testing.B) {
	fx := sdkfixture.StartFixture(b, sdkfixture.FixtureOptions{APIKey: sdkKey})
	th := newTestHost(b, "", nil)
	c, err := th.Admit(ctxT(b), fx.URL, sdkKey)
	if err != nil {
		b.Fatalf("Admit: %v", err)
	}
	eventually(b, "online", func() bool { s, _ := th.Connector(c.CardID); return s.Link == LinkOnline })
	s, err := th.Connect(ctxT(b), "ann", sdkfixture.FixtureCardID, sdkfixture.FlowTokenForm,
		map[string]string{"token": "good-token-value", "name": "Ann"})
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	if _, err := s.Wait(ctxT(b)); err != nil {
		b.Fatalf("sign-in: %v", err)
	}
	args := json.RawMessage(`{"connector_channel_id":"x","text":"hello there"}`)
	ctx := ctxT(b)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := th.Invoke(ctx, "ann", "", sdkfixture.ToolEcho, args, ""); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
