package wsconn

import (
	"context"
	"strconv"
	"sync"
	"syscall"
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
// each side of an echo round trip (BenchmarkEcho/raw does not decode):
// wsconn's one-pass read against protocol.DecodeEnvelope.
func BenchmarkDecodeEnvelope(b *testing.B) {
	b.Run("wsconn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeEnvelope(benchFrame); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := protocol.DecodeEnvelope(benchFrame); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPipelined runs 64 request/answer round trips in flight over one
// socket, the shape of xconn bench's ping scenario: wsconn on both sides
// (the server answers from its read goroutine with TrySendRaw, as the
// connector's ping path does) against raw coder/websocket with the
// baseline's structure (writes under a lock, one read-and-write goroutine on
// the server).
func BenchmarkPipelined(b *testing.B) {
	const inflight = 64
	b.Run("wsconn", func(b *testing.B) {
		srv := startServer(b, Options{}, func(ctx context.Context, c *Conn) Handler {
			return func(env *protocol.Envelope, raw []byte, err error) {
				if err == nil {
					_ = c.TrySendRaw(raw)
				}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := Dial(ctx, srv.url, nil, Options{SendQueue: 1024})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		var mu sync.Mutex
		wait := map[string]chan struct{}{}
		runConn(b, c, func(env *protocol.Envelope, _ []byte, err error) {
			if err != nil {
				return
			}
			mu.Lock()
			ch := wait[env.PacketID]
			delete(wait, env.PacketID)
			mu.Unlock()
			if ch != nil {
				close(ch)
			}
		})
		var seq sync.Mutex
		n := 0
		b.SetParallelism(inflight / 2) // GOMAXPROCS 2 on the target machine
		defer reportCPU(b)()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				seq.Lock()
				n++
				id := "pkt_" + strconv.Itoa(n)
				seq.Unlock()
				ch := make(chan struct{})
				mu.Lock()
				wait[id] = ch
				mu.Unlock()
				env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: id, Type: protocol.TypePing, Time: 1764700000000, Payload: []byte(`{}`)}
				if err := c.Send(context.Background(), env); err != nil {
					b.Error(err)
					return
				}
				<-ch
			}
		})
	})
	b.Run("raw", func(b *testing.B) {
		var wg sync.WaitGroup
		defer wg.Wait()
		url := startRawServer(b, &wg, []string{protocol.Subprotocol})
		ws, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close(websocket.StatusNormalClosure, "")
		fifo := make(chan chan struct{}, 4*inflight)
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			for {
				if _, _, err := ws.Read(context.Background()); err != nil {
					return
				}
				close(<-fifo)
			}
		}()
		defer func() { _ = ws.CloseNow(); <-readDone }()
		frame := []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"pkt_1","type":"ping","time":1764700000000,"payload":{}}`)
		var mu sync.Mutex
		b.SetParallelism(inflight / 2)
		defer reportCPU(b)()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ch := make(chan struct{})
				mu.Lock()
				fifo <- ch
				err := ws.Write(context.Background(), websocket.MessageText, frame)
				mu.Unlock()
				if err != nil {
					b.Error(err)
					return
				}
				<-ch
			}
		})
	})
}

// reportCPU reports the process CPU time (user and system) per operation,
// which other load on the machine skews less than the wall time; call the
// returned func when the measured loop is done.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
