package connector_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// BenchmarkToolInvoke measures one tool.invoke -> tool.invoke.ack round
// trip over a real loopback WebSocket (validation, routing, handler).
func BenchmarkToolInvoke(b *testing.B) {
	f := sdkfixture.StartFixture(b, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(b, "")
	ctx := context.Background()
	ack, err := c.Open(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	ch := ack.ConnectorChannelID
	p := protocol.ToolInvokePayload{ToolID: sdkfixture.ToolWhoAmI, Arguments: json.RawMessage(`{"connector_channel_id":"` + ch + `"}`)}
	b.ResetTimer()
	for b.Loop() {
		env, err := c.Request(ctx, protocol.TypeToolInvoke, ch, p)
		if err != nil || env.Error != nil {
			b.Fatalf("%v %+v", err, env.Error)
		}
	}
}
