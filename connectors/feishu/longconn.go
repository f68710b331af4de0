package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// The long connection (fact sheet §5).
//
// Why not larkws.Client of oapi-sdk-go v3.9.9: its Start ends in
// select{} and never returns, its ping loop sleeps forever and respawns
// itself, and Close races with its own receive loop (a -race test that
// calls it fails). Two goroutines would outlive every logout and the
// connection could not be stopped cleanly. So the connector speaks the
// same protocol itself, with the SDK's own wire types (larkws.Frame and
// its headers, BootstrapRequest, EndpointResp, ClientConfig, Response),
// and owns the lifetime: runLongConn is the SDK Consumer's Run for one
// app_id, the socket is read with the consumer's context (whose end —
// the app's last channel logging out, lease expiry, Close — closes the
// socket), the pinger and the event worker are its goroutines and are
// waited for before it returns. A failure returns an error and the SDK
// restarts Run with backoff (the reconnect).

// Bounds of the long connection.
const (
	defaultPingInterval = 2 * time.Minute
	// eventQueue bounds the events waiting for the worker; beyond it an
	// event is acked 500 and Feishu pushes it again (§5).
	eventQueue = 64
	// maxParts bounds split payloads being reassembled.
	maxParts = 64
	// partWindow is the reassembly window of split payloads (§5.4).
	partWindow = 5 * time.Second
	// maxFrameBytes bounds one frame read.
	maxFrameBytes = 4 << 20
	// maxPartBytes bounds the bytes of all split payloads being
	// reassembled, and so the size of one reassembled event.
	maxPartBytes = 8 << 20
	// maxQueueBytes bounds the payload bytes of the events waiting for the
	// worker; beyond it an event is acked 500, as when the queue is full.
	maxQueueBytes = 16 << 20
)

// bootstrap asks for the long connection's URL (§5.1).
func (c *Connector) bootstrap(ctx context.Context, cr cred) (string, *larkws.ClientConfig, error) {
	body, _ := json.Marshal(larkws.BootstrapRequest{AppID: cr.AppID, AppSecret: cr.Secret})
	ctx, cancel := context.WithTimeout(ctx, c.api.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api.base+larkws.GenEndpointUri, bytes.NewReader(body))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("locale", "zh")
	req.Header.Set("Content-Type", "application/json")
	res, err := c.api.hc.Do(req)
	if err != nil {
		return "", nil, scrubURL(err)
	}
	defer res.Body.Close()
	var out larkws.EndpointResp
	if res.StatusCode != http.StatusOK {
		return "", nil, &APIError{Op: "long connection endpoint", Status: res.StatusCode, Code: 1, Msg: "server error"}
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return "", nil, fmt.Errorf("feishu long connection endpoint: %w", err)
	}
	if out.Code != 0 {
		return "", nil, &APIError{Op: "long connection endpoint", Status: res.StatusCode, Code: out.Code, Msg: out.Msg}
	}
	if out.Data == nil || out.Data.Url == "" {
		return "", nil, &APIError{Op: "long connection endpoint", Status: http.StatusInternalServerError, Code: 1, Msg: "no URL"}
	}
	return out.Data.Url, out.Data.ClientConfig, nil
}

// runLongConn is the long connection of one app, shared by its channels
// (the SDK runs one per app_id and cancels ctx with the last channel).
// The SDK turns its health into the channels' status: m.Connected once
// the socket is up; a failure returns, and the SDK marks the channels
// degraded and runs it again with backoff (the reconnect); a refusal that
// §5.1 calls fatal returns a terminal error, and the SDK marks the
// channels (revoked for refused credentials, error otherwise) and stops
// reconnecting until they sign in again.
func (c *Connector) runLongConn(ctx context.Context, appID string, m *connector.Members[binding]) error {
	chs := m.Channels()
	if len(chs) == 0 {
		<-ctx.Done()
		return nil
	}
	cr := chs[0].Binding.cred()
	wsURL, cfg, err := c.bootstrap(ctx, cr)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return bootstrapError(appID, err)
	}
	u, err := url.Parse(wsURL)
	if err != nil {
		return fmt.Errorf("feishu: app %s: long connection URL: %w", appID, err)
	}
	sid, _ := strconv.ParseInt(u.Query().Get(larkws.ServiceID), 10, 32)
	conn, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: c.api.hc})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if res != nil && res.Header.Get(larkws.HeaderHandshakeStatus) != "" {
			return handshakeError(appID, res)
		}
		return fmt.Errorf("feishu: app %s: dial long connection: %w", appID, scrubURL(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxFrameBytes)
	m.Connected(ctx)
	c.log.Info("feishu: long connection up", "app_id", appID)

	lc := &longConn{c: c, conn: conn, app: appID, m: m, service: int32(sid), interval: defaultPingInterval,
		queue: make(chan larkws.Frame, eventQueue), parts: map[string]*partial{}, reset: make(chan struct{}, 1)}
	if cfg != nil {
		lc.configure(cfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); lc.pinger(ctx) }()
	go func() { defer wg.Done(); lc.worker(ctx) }()
	err = lc.readLoop(ctx)
	cancel()
	wg.Wait()
	return err // nil when the consumer's context ended
}

// bootstrapError classifies a failed endpoint request (§5.1): busy,
// internal and HTTP errors are worth a reconnect; auth failed (514) means
// the app's credentials are refused, so the channels are revoked; any
// other client error is fatal, so they are marked error.
func bootstrapError(appID string, err error) error {
	err = fmt.Errorf("feishu: app %s: %w", appID, err)
	var ae *APIError
	switch {
	case !errors.As(err, &ae) || ae.Temporary():
		return err
	case ae.Code == larkws.AuthFailed:
		return fmt.Errorf("%w: %w", connector.ErrRevoked, err)
	}
	return &connector.TerminalError{Status: protocol.StatusError, Err: err}
}

// handshakeError classifies a refused WebSocket handshake (§5.1): 403 and
// 514 with the connection-limit code are fatal, the others worth a
// reconnect.
func handshakeError(appID string, res *http.Response) error {
	status := atoi(res.Header.Get(larkws.HeaderHandshakeStatus))
	err := fmt.Errorf("feishu: app %s: %w", appID, &APIError{Op: "long connection", Status: res.StatusCode, Code: status,
		Msg: res.Header.Get(larkws.HeaderHandshakeMsg)})
	if status == larkws.Forbidden || (status == larkws.AuthFailed && atoi(res.Header.Get(larkws.HeaderHandshakeAuthErrCode)) == larkws.ExceedConnLimit) {
		return &connector.TerminalError{Status: protocol.StatusError, Err: err}
	}
	return err
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

type partial struct {
	parts [][]byte
	size  int // bytes held in parts
	first time.Time
}

// longConn is one live long connection.
type longConn struct {
	c       *Connector
	conn    *websocket.Conn
	app     string
	m       *connector.Members[binding]
	service int32
	queue   chan larkws.Frame
	parts   map[string]*partial // only the read loop touches it
	partLen int                 // bytes held in parts; only the read loop touches it
	queued  atomic.Int64        // payload bytes in queue
	reset   chan struct{}

	mu       sync.Mutex
	interval time.Duration
}

// configure applies a ClientConfig (seconds, §5.3).
func (lc *longConn) configure(cfg *larkws.ClientConfig) {
	if cfg.PingInterval <= 0 {
		return
	}
	lc.mu.Lock()
	lc.interval = time.Duration(cfg.PingInterval) * time.Second
	lc.mu.Unlock()
	select {
	case lc.reset <- struct{}{}:
	default:
	}
}

func (lc *longConn) pingInterval() time.Duration {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.interval
}

// pinger sends a ping at once and then every PingInterval (§5.3).
func (lc *longConn) pinger(ctx context.Context) {
	for {
		b, _ := larkws.NewPingFrame(lc.service).Marshal()
		if err := lc.conn.Write(ctx, websocket.MessageBinary, b); err != nil {
			return
		}
		t := time.NewTimer(lc.pingInterval())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-lc.reset:
			t.Stop()
		case <-t.C:
		}
	}
}

// readLoop reads frames until the socket or ctx ends; it never runs a
// handler: events go to the worker through the bounded queue.
func (lc *longConn) readLoop(ctx context.Context) error {
	for {
		typ, data, err := lc.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("feishu: app %s: long connection closed: %w", lc.app, err)
		}
		if typ != websocket.MessageBinary {
			continue
		}
		var f larkws.Frame
		if err := f.Unmarshal(data); err != nil {
			lc.c.log.Warn("feishu: bad frame", "app_id", lc.app, "err", err)
			continue
		}
		hs := larkws.Headers(f.Headers)
		switch larkws.FrameType(f.Method) {
		case larkws.FrameTypeControl:
			if hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePong) && len(f.Payload) > 0 {
				var cfg larkws.ClientConfig
				if json.Unmarshal(f.Payload, &cfg) == nil {
					lc.configure(&cfg)
				}
			}
		case larkws.FrameTypeData:
			if hs.GetString(larkws.HeaderType) != string(larkws.MessageTypeEvent) {
				continue // card callbacks are not used (the SDK drops them too)
			}
			if sum := hs.GetInt(larkws.HeaderSum); sum > 1 {
				pl := lc.combine(hs.GetString(larkws.HeaderMessageID), sum, hs.GetInt(larkws.HeaderSeq), f.Payload)
				if pl == nil {
					continue
				}
				f.Payload = pl
			}
			n := int64(len(f.Payload))
			if lc.queued.Add(n) > maxQueueBytes {
				lc.queued.Add(-n)
				lc.ack(ctx, f, http.StatusInternalServerError, 0) // Feishu pushes it again
				continue
			}
			select {
			case lc.queue <- f:
			default:
				lc.queued.Add(-n)
				lc.ack(ctx, f, http.StatusInternalServerError, 0) // Feishu pushes it again
			}
		}
	}
}

// combine joins split payloads in seq order (§5.4); nil until complete.
func (lc *longConn) combine(id string, sum, seq int, b []byte) []byte {
	now := time.Now()
	for k, p := range lc.parts {
		if now.Sub(p.first) > partWindow {
			lc.dropPartial(k)
		}
	}
	if sum > 64 || seq < 0 || seq >= sum {
		return nil
	}
	p := lc.parts[id]
	if p == nil {
		if len(lc.parts) >= maxParts {
			return nil
		}
		p = &partial{parts: make([][]byte, sum), first: now}
		lc.parts[id] = p
	}
	if len(p.parts) != sum {
		return nil
	}
	grow := len(b) - len(p.parts[seq]) // a repeated part replaces the earlier one
	if lc.partLen+grow > maxPartBytes {
		lc.dropPartial(id) // too large to reassemble: its event is never acked, Feishu pushes it again
		return nil
	}
	p.parts[seq] = b
	p.size += grow
	lc.partLen += grow
	for _, part := range p.parts {
		if part == nil {
			return nil
		}
	}
	out := make([]byte, 0, p.size)
	for _, part := range p.parts {
		out = append(out, part...)
	}
	lc.dropPartial(id)
	return out
}

// dropPartial forgets the split payload id.
func (lc *longConn) dropPartial(id string) {
	if p := lc.parts[id]; p != nil {
		lc.partLen -= p.size
		delete(lc.parts, id)
	}
}

// worker handles events in order and acks each (§5.4): 200 once the
// message is durably published (or deliberately ignored), 500 otherwise.
func (lc *longConn) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-lc.queue:
			lc.queued.Add(-int64(len(f.Payload)))
			start := time.Now()
			code := http.StatusOK
			if err := lc.c.handleEvent(ctx, lc.m, f.Payload); err != nil {
				if ctx.Err() != nil {
					return // no ack: Feishu pushes it again
				}
				lc.c.log.Warn("feishu: event not handled (Feishu pushes it again)", "app_id", lc.app, "err", err)
				code = http.StatusInternalServerError
			}
			lc.ack(ctx, f, code, time.Since(start))
		}
	}
}

// ack writes the same frame back with biz_rt and the Response payload.
func (lc *longConn) ack(ctx context.Context, f larkws.Frame, code int, took time.Duration) {
	hs := larkws.Headers(f.Headers)
	hs.Add(larkws.HeaderBizRt, strconv.FormatInt(took.Milliseconds(), 10))
	f.Headers = hs
	f.Payload, _ = json.Marshal(larkws.NewResponseByCode(code))
	b, err := f.Marshal()
	if err == nil {
		err = lc.conn.Write(ctx, websocket.MessageBinary, b)
	}
	if err != nil && ctx.Err() == nil {
		lc.c.log.Warn("feishu: ack not written", "app_id", lc.app, "err", err)
	}
}
