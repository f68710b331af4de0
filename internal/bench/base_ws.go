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
		ctx := r.Context()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, b); err != nil {
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
	e.fifo <- w
	err := e.c.Write(ctx, websocket.MessageText, e.frame)
	e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("bench: echo write: %w", err)
	}
	select {
	case <-w:
		return nil
	case <-e.done:
		return errors.New("bench: echo connection closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

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
	paced, failed := runPaced(ctx, r.Rate/2, cfg.Duration, cfg.InFlight*4, ec.roundTrip)
	if failed > 0 {
		return nil, fmt.Errorf("ws-echo: %d round trips failed at half of peak", failed)
	}
	r.Extra = append(r.Extra,
		Metric{Name: "p50_at_half_peak", Value: ms(paced.Total.Quantile(0.5)), Unit: "ms"},
		Metric{Name: "p99_at_half_peak", Value: ms(paced.Total.Quantile(0.99)), Unit: "ms"},
		Metric{Name: "p99_at_half_peak_generator_lag", Value: ms(paced.Lag.Quantile(0.99)), Unit: "ms"},
		Metric{Name: "p99_at_half_peak_service", Value: ms(paced.Service.Quantile(0.99)), Unit: "ms"})
	return []Result{r}, nil
}
