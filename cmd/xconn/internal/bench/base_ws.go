package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

// invokeFrame returns a tool.invoke frame like those of the invoke
// scenario: the raw echo baseline sends byte-identical frames.
func invokeFrame(size int) ([]byte, error) {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_0123456789abcdefghijklmnop",
		RequestID: "req_0123456789abcdefghijklmnop", ConnectorChannelID: "cch_0123456789abcdefghijklmnop",
		Type: protocol.TypeToolInvoke, Time: 1764700000000}
	if err := env.SetPayload(protocol.ToolInvokePayload{ToolID: toolEcho, Arguments: toolArgs("cch_0123456789abcdefghijklmnop", size),
		Context: &protocol.ToolContext{SessionID: "s0", ToolCallID: "call_0123456789"}}); err != nil {
		return nil, err
	}
	return env.Encode()
}

// echoServer is a raw coder/websocket server that writes every text frame
// back, one connection at a time per goroutine.
func echoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Subprotocol}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		// Reads and writes take a context without a Done channel, as
		// xconn's reader and corked writer do: coder/websocket arms a
		// context.AfterFunc per call for any other context. One AfterFunc
		// for the connection ends it with the request.
		stop := context.AfterFunc(r.Context(), func() { _ = c.CloseNow() })
		defer stop()
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			if err := c.Write(context.Background(), typ, b); err != nil {
				return
			}
		}
	})
}

// echoClient pipelines frames over one raw socket: writers queue a waiter
// and write under one lock; the reader wakes waiters in order (the echo
// server keeps order).
type echoClient struct {
	c     *websocket.Conn
	mu    sync.Mutex
	fifo  chan chan struct{}
	done  chan struct{}
	frame []byte
}

func dialEcho(ctx context.Context, url string, frame []byte, inflight int) (*echoClient, error) {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), &websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}})
	if err != nil {
		return nil, fmt.Errorf("bench: dial echo: %w", err)
	}
	e := &echoClient{c: c, fifo: make(chan chan struct{}, inflight+1), done: make(chan struct{}), frame: frame}
	go e.read()
	return e, nil
}

func (e *echoClient) read() {
	defer close(e.done)
	for {
		_, _, err := e.c.Read(context.Background())
		if err != nil {
			return
		}
		w := <-e.fifo
		close(w)
	}
}

func (e *echoClient) roundTrip(ctx context.Context) error {
	w := make(chan struct{})
	e.mu.Lock()
	select {
	case e.fifo <- w:
	case <-e.done:
		// The reader has stopped: nobody would ever drain the queue.
		e.mu.Unlock()
		return errEchoClosed
	}
	// Not ctx: coder/websocket closes the whole connection when the
	// context of a write ends, and the load generator cancels ctx with
	// round trips in flight when a measurement ends. Background also spares
	// the per-write context.AfterFunc that xconn's corked writer does not
	// pay either.
	err := e.c.Write(context.Background(), websocket.MessageText, e.frame)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("bench: echo write: %w", err)
	}
	select {
	case <-w:
		return nil
	case <-e.done:
		return errEchoClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errEchoClosed reports a round trip on an echo connection that has ended.
var errEchoClosed = errors.New("bench: echo connection closed")

func (e *echoClient) close() {
	_ = e.c.Close(websocket.StatusNormalClosure, "")
	<-e.done
}

// runWSEcho measures the raw echo baseline with cfg.InFlight round trips in
// flight over one socket.
func runWSEcho(ctx context.Context, cfg Config, _ *env) ([]Result, error) {
	frame, err := invokeFrame(cfg.MessageSize)
	if err != nil {
		return nil, err
	}
	srv, err := listen(echoHandler())
	if err != nil {
		return nil, err
	}
	defer srv.close()
	ec, err := dialEcho(ctx, srv.url, frame, cfg.InFlight)
	if err != nil {
		return nil, err
	}
	defer ec.close()
	m, err := runLoad(ctx, load{workers: cfg.InFlight, warmup: cfg.Warmup, duration: cfg.Duration,
		op: func(ctx context.Context, _ int) error { return ec.roundTrip(ctx) }})
	if err != nil {
		return nil, fmt.Errorf("ws-echo: %w", err)
	}
	r := m.result(nameWSEcho, "op/s")
	r.Extra = []Metric{{Name: "frame_bytes", Value: float64(len(frame)), Unit: "B"}}
	// The same open loop as invoke's "p99 at half of peak", on the raw
	// socket: what the socket, the library and the scheduler give alone.
	paced, err := pacedEcho(ctx, cfg, r.Rate/2)
	if err != nil {
		return nil, fmt.Errorf("ws-echo: at half of peak: %w", err)
	}
	r.Extra = append(r.Extra, pacedMetrics("at_half_peak", "ms", paced)...)
	return []Result{r}, nil
}

// pacedEcho runs the open loop of runPaced at rate on a fresh raw echo
// socket, with invoke's frames and limit of calls outstanding.
func pacedEcho(ctx context.Context, cfg Config, rate float64) (pacedResult, error) {
	frame, err := invokeFrame(cfg.MessageSize)
	if err != nil {
		return pacedResult{}, err
	}
	srv, err := listen(echoHandler())
	if err != nil {
		return pacedResult{}, err
	}
	defer srv.close()
	ec, err := dialEcho(ctx, srv.url, frame, cfg.InFlight*4)
	if err != nil {
		return pacedResult{}, err
	}
	defer ec.close()
	paced, failed := runPaced(ctx, rate, cfg.Duration, cfg.InFlight*4, ec.roundTrip)
	if failed > 0 {
		return pacedResult{}, fmt.Errorf("%d round trips failed", failed)
	}
	return paced, nil
}

// pacedMetrics reports an open-loop run as p50 and p99 "_"+suffix, and the
// p99 split into the generator's lag and the service time. p99Unit is the
// unit of the p99 (it may carry the goal).
func pacedMetrics(suffix, p99Unit string, p pacedResult) []Metric {
	return []Metric{
		{Name: "p50_" + suffix, Value: ms(p.Total.Quantile(0.5)), Unit: "ms"},
		{Name: "p99_" + suffix, Value: ms(p.Total.Quantile(0.99)), Unit: p99Unit},
		// Where the tail comes from: the load generator's own delay before
		// a call is sent, and the call itself.
		{Name: "p99_" + suffix + "_generator_lag", Value: ms(p.Lag.Quantile(0.99)), Unit: "ms"},
		{Name: "p99_" + suffix + "_service", Value: ms(p.Service.Quantile(0.99)), Unit: "ms"},
	}
}
