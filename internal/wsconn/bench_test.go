package wsconn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// benchFrame is a typical small packet.
var benchFrame = []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"pkt_01HZX4Y2J8","connector_channel_id":"ch_8f2c","type":"chat.message","time":1780000000000,"payload":{"message_id":"m_1","text":"hello, this is a short chat message"}}`)

// BenchmarkEcho compares one echo round trip through two Conns (client and
// server both wsconn) with the same round trip over raw coder/websocket.
func BenchmarkEcho(b *testing.B) {
	b.Run("wsconn", func(b *testing.B) {
		srv := startServer(b, Options{}, echo)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := Dial(ctx, srv.url, nil, Options{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		in := make(chan struct{}, 1)
		runConn(b, c, func(*protocol.Envelope, []byte, error) { in <- struct{}{} })
		b.SetBytes(int64(len(benchFrame)))
		b.ResetTimer()
		for b.Loop() {
			if err := c.SendRaw(context.Background(), benchFrame); err != nil {
				b.Fatal(err)
			}
			<-in
		}
	})
	b.Run("raw", func(b *testing.B) {
		var wg sync.WaitGroup
		defer wg.Wait()
		url := startRawServer(b, &wg, []string{protocol.Subprotocol})
		ctx := context.Background()
		ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close(websocket.StatusNormalClosure, "")
		ws.SetReadLimit(DefaultReadLimit)
		b.SetBytes(int64(len(benchFrame)))
		b.ResetTimer()
		for b.Loop() {
			if err := ws.Write(ctx, websocket.MessageText, benchFrame); err != nil {
				b.Fatal(err)
			}
			if _, _, err := ws.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeEnvelope is the per-frame decode cost that wsconn adds on
// each side of an echo round trip (BenchmarkEcho/raw does not decode).
func BenchmarkDecodeEnvelope(b *testing.B) {
	for b.Loop() {
		if _, err := protocol.DecodeEnvelope(benchFrame); err != nil {
			b.Fatal(err)
		}
	}
}
