package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// The Stream mode connection (fact sheet §3).
//
// runStream is the SDK Consumer's Run for one Client ID: it registers a
// connection (POST /v1.0/gateway/connections/open: endpoint and a ticket
// valid once, for 90 s), dials endpoint?ticket=..., and reads frames with
// the consumer's context (whose end — the app's channel logging out,
// lease expiry, Close — closes the socket). One reader, one worker and
// one keepalive goroutine, all waited for before it returns:
//
//   - SYSTEM ping is answered at once by the reader with its opaque;
//     SYSTEM disconnect (DingTalk closes the socket 10 s later) makes the
//     reader stop taking frames; the worker finishes what it holds, and
//     Run returns nil, which the SDK runs again at once with a new ticket;
//   - CALLBACK /v1.0/im/bot/messages/get goes through a bounded queue to
//     the worker, which publishes it durably and only then acks it 200
//     (500 when the publish failed: DingTalk does not push a bot message
//     again either way, §3.5);
//   - the keepalive pings the socket every PingInterval; no pong closes
//     it, and a failure returns an error: the SDK marks the channel
//     degraded and runs it again with backoff.

// Stream protocol names (§3).
const (
	topicBotMessage = "/v1.0/im/bot/messages/get"
	typeSystem      = "SYSTEM"
	typeCallback    = "CALLBACK"
	userAgent       = "xconn-dingtalk/" + ConnectorVersion
)

// Bounds of the Stream connection.
const (
	// frameQueue bounds the bot messages waiting for the worker; beyond it
	// a message is acked 500 and logged (DingTalk does not push it again).
	frameQueue = 64
	// maxFrameBytes bounds one frame read.
	maxFrameBytes = 4 << 20
	// maxQueueBytes bounds the bytes of the queued bot messages.
	maxQueueBytes = 16 << 20
	// publishAttempts and publishBackoff retry a failed publish: DingTalk
	// will not push the message again, so a transient store error is
	// worth a few tries before it is lost.
	publishAttempts = 3
	publishBackoff  = 500 * time.Millisecond
)

// frame is a data frame DingTalk pushes (§3.3).
type frame struct {
	SpecVersion string            `json:"specVersion"`
	Type        string            `json:"type"`
	Headers     map[string]string `json:"headers"`
	Data        string            `json:"data"`
}

// response is the client's answer to a frame (§3.3).
type response struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

type subscription struct {
	Type  string `json:"type"`
	Topic string `json:"topic"`
}

// openStream registers a connection (§3.1) and returns the WebSocket URL
// with its ticket.
func (c *Connector) openStream(ctx context.Context, cr cred) (string, error) {
	body, _ := json.Marshal(map[string]any{"clientId": cr.ClientID, "clientSecret": cr.Secret, "ua": userAgent,
		"subscriptions": []subscription{{Type: typeSystem, Topic: "*"}, {Type: typeCallback, Topic: topicBotMessage}}})
	var out struct {
		Endpoint string `json:"endpoint"`
		Ticket   string `json:"ticket"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	}
	status, err := c.api.raw(ctx, http.MethodPost, c.api.base+"/v1.0/gateway/connections/open", "application/json", body, "", &out)
	if err != nil {
		return "", fmt.Errorf("dingtalk stream registration: %w", err)
	}
	if status != http.StatusOK || out.Endpoint == "" || out.Ticket == "" {
		return "", &APIError{Op: "stream registration", Status: status, Code: out.Code, Msg: out.Message}
	}
	c.srv.Redact(out.Ticket)
	u, err := url.Parse(out.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "wss" && !(u.Scheme == "ws" && strings.HasPrefix(c.api.base, "http://"))) {
		return "", &APIError{Op: "stream registration", Status: http.StatusBadGateway, Msg: "endpoint is not a wss URL"}
	}
	q := u.Query()
	q.Set("ticket", out.Ticket)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// registrationError classifies a failed registration: 401 and 403 mean
// the app's credentials are refused (the channel is revoked), another
// client error is fatal (status error), the rest is worth a reconnect.
func registrationError(clientID string, err error) error {
	err = fmt.Errorf("dingtalk: app %s: %w", clientID, err)
	var ae *APIError
	switch {
	case !errors.As(err, &ae) || ae.Temporary() || ae.Status == http.StatusBadGateway:
		return err
	case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
		return fmt.Errorf("%w: %w", connector.ErrRevoked, err)
	case ae.Status >= 400 && ae.Status < 500:
		return &connector.TerminalError{Status: protocol.StatusError, Err: err}
	}
	return err
}

// runStream is the Stream connection of one app, shared by its channel.
func (c *Connector) runStream(ctx context.Context, clientID string, m *connector.Members[binding]) error {
	chs := m.Channels()
	if len(chs) == 0 {
		<-ctx.Done()
		return nil
	}
	cr := chs[0].Binding.cred()
	wsURL, err := c.openStream(ctx, cr)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return registrationError(clientID, err)
	}
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: c.api.hc})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("dingtalk: app %s: dial stream: %w", clientID, scrubURL(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxFrameBytes)
	m.Connected(ctx)
	c.log.Info("dingtalk: stream connected", "client_id", clientID)

	sc := &streamConn{c: c, conn: conn, app: clientID, m: m, queue: make(chan frame, frameQueue)}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sc.keepalive(rctx, cancel) }()
	workerDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(workerDone); sc.worker(ctx) }()
	err = sc.readLoop(rctx)
	close(sc.queue) // the worker finishes what it holds, then ends
	select {
	case <-workerDone:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err // nil after a SYSTEM disconnect: the SDK reconnects
}

// streamConn is one live Stream connection.
type streamConn struct {
	c      *Connector
	conn   *websocket.Conn
	app    string
	m      *connector.Members[binding]
	queue  chan frame
	queued atomic.Int64 // bytes of data in queue
	wmu    sync.Mutex
}

// write sends one response frame.
func (sc *streamConn) write(ctx context.Context, r response) error {
	b, _ := json.Marshal(r)
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return sc.conn.Write(ctx, websocket.MessageText, b)
}

// ack answers frame f with code (§3.3): headers carry its messageId.
func (sc *streamConn) ack(ctx context.Context, f frame, code int, data string) {
	msg := "OK"
	if code != http.StatusOK {
		msg = "internal error"
	}
	err := sc.write(ctx, response{Code: code, Message: msg, Data: data,
		Headers: map[string]string{"messageId": f.Headers["messageId"], "contentType": "application/json"}})
	if err != nil && ctx.Err() == nil {
		sc.c.log.Warn("dingtalk: ack not written", "client_id", sc.app, "err", err)
	}
}

// keepalive pings the socket; a ping unanswered within the interval
// closes it (the read loop then ends).
func (sc *streamConn) keepalive(ctx context.Context, stop context.CancelFunc) {
	every := sc.c.pingInterval
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := sc.conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			sc.c.log.Warn("dingtalk: stream ping unanswered; reconnecting", "client_id", sc.app)
			stop()
			sc.conn.CloseNow()
			return
		}
	}
}

// errPingTimeout is the read loop's error after the keepalive closed an
// unresponsive socket.
var errPingTimeout = errors.New("stream ping unanswered")

// frameKind is what a frame asks of the client.
type frameKind int

const (
	frameBad        frameKind = iota // not a frame: logged and skipped
	framePing                        // SYSTEM ping: answered with its data
	frameDisconnect                  // SYSTEM disconnect: reconnect
	frameBotMessage                  // CALLBACK bot message: publish, then ack
	frameOther                       // a topic not subscribed: acked 404
)

// decodeFrame decodes one text frame of the Stream connection (§3.3) and
// says what it asks; a frame without headers is bad.
func decodeFrame(data []byte) (frame, frameKind) {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil || f.Headers == nil {
		return frame{}, frameBad
	}
	topic := f.Headers["topic"]
	switch {
	case f.Type == typeSystem && topic == "ping":
		return f, framePing
	case f.Type == typeSystem && topic == "disconnect":
		return f, frameDisconnect
	case f.Type == typeCallback && topic == topicBotMessage:
		return f, frameBotMessage
	}
	return f, frameOther
}

// readLoop reads frames until the socket, ctx or a SYSTEM disconnect
// ends it; it never runs a handler: bot messages go to the worker.
func (sc *streamConn) readLoop(ctx context.Context) error {
	for {
		typ, data, err := sc.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				// The consumer's end (runStream then returns nil) or the
				// keepalive's.
				return fmt.Errorf("dingtalk: app %s: %w", sc.app, errPingTimeout)
			}
			return fmt.Errorf("dingtalk: app %s: stream closed: %w", sc.app, err)
		}
		if typ != websocket.MessageText {
			continue
		}
		f, kind := decodeFrame(data)
		switch kind {
		case frameBad:
			sc.c.log.Warn("dingtalk: bad stream frame", "client_id", sc.app)
		case framePing:
			sc.ack(ctx, f, http.StatusOK, f.Data) // echoes the opaque
		case frameDisconnect:
			sc.c.log.Info("dingtalk: stream disconnect announced; reconnecting", "client_id", sc.app)
			return nil
		case frameBotMessage:
			n := int64(len(f.Data))
			if sc.queued.Add(n) > maxQueueBytes {
				sc.queued.Add(-n)
				sc.c.log.Error("dingtalk: bot message dropped: queue full (DingTalk will not push it again)", "client_id", sc.app)
				sc.ack(ctx, f, http.StatusInternalServerError, "")
				continue
			}
			select {
			case sc.queue <- f:
			default:
				sc.queued.Add(-n)
				sc.c.log.Error("dingtalk: bot message dropped: queue full (DingTalk will not push it again)", "client_id", sc.app)
				sc.ack(ctx, f, http.StatusInternalServerError, "")
			}
		case frameOther:
			// Not subscribed (§3.2 reserves 404 for an unknown topic).
			sc.ack(ctx, f, http.StatusNotFound, "")
		}
	}
}

// worker publishes the bot messages in order and acks each (§3.5): 200
// once durably published (or deliberately ignored), 500 otherwise. It
// ends when the queue is closed and drained, or ctx ends.
func (sc *streamConn) worker(ctx context.Context) {
	for {
		var f frame
		var ok bool
		select {
		case <-ctx.Done():
			return
		case f, ok = <-sc.queue:
			if !ok {
				return
			}
		}
		sc.queued.Add(-int64(len(f.Data)))
		code := http.StatusOK
		err := sc.c.handleBotMessage(ctx, sc.m, []byte(f.Data))
		for i := 1; err != nil && isRetryable(err) && i < publishAttempts && ctx.Err() == nil; i++ {
			select {
			case <-ctx.Done():
			case <-time.After(publishBackoff * time.Duration(i)):
				err = sc.c.handleBotMessage(ctx, sc.m, []byte(f.Data))
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			sc.c.log.Error("dingtalk: bot message not published (DingTalk will not push it again)", "client_id", sc.app, "err", err)
			code = http.StatusInternalServerError
		}
		sc.ack(ctx, f, code, `{"response": null}`)
	}
}

// isRetryable reports a publish failure worth another try.
func isRetryable(err error) bool {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Retryable
	}
	return connector.IsTemporary(err) || isTemporary(err)
}
