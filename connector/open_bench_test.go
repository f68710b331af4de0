package connector_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// BenchmarkChannelOpen measures channel.open round trips over one socket,
// sent by parallel goroutines (16 per GOMAXPROCS), client included: "new"
// creates a channel per open (a durable write, group committed), "reopen"
// reopens one of 1,000 known channels (nothing written).
func BenchmarkChannelOpen(b *testing.B) {
	f := sdkfixture.StartFixture(b, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(b, "")
	ctx := context.Background()
	b.Run("new", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Open(ctx, ""); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	ids := make([]string, 1000)
	for i := range ids {
		ack, err := c.Open(ctx, "")
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = ack.ConnectorChannelID
	}
	b.Run("reopen", func(b *testing.B) {
		var next atomic.Int64
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := ids[int(next.Add(1))%len(ids)]
				if _, err := c.Open(ctx, id); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkEncodeOpenAck compares the channel.open.ack payload encoder
// with encoding/json on a created channel's Descriptor with four tools.
func BenchmarkEncodeOpenAck(b *testing.B) {
	d := &protocol.Descriptor{
		Schema: protocol.DescriptorSchema,
		Connection: protocol.Connection{ConnectorCardID: "im.bench", ConnectorID: "conn_0123456789abcdef", ConnectorChannelID: "cch_0123456789abcdef",
			TargetType: "im", Profiles: []protocol.Profile{protocol.ProfileIMv2}, Status: protocol.StatusCreated},
		Target: protocol.DescriptorTarget{Provider: "bench", Label: "Bench", DisplayName: "Bench not bound"},
	}
	for _, id := range []string{"bench_echo", "bench_send", "bench_whoami", "bench_files"} {
		d.Tools = append(d.Tools, protocol.ToolState{ToolID: id, Status: protocol.ToolUnavailable, Reason: "sign-in required"})
	}
	id := d.Connection.ConnectorChannelID
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := connector.EncodeOpenAck(id, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(protocol.ChannelOpenAckPayload{ConnectorChannelID: id, ConnectionDescriptor: d}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
