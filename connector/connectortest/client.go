package connectortest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// DefaultPushBuffer bounds the unmatched packets a Client keeps; when the
// queue is full, newer packets are dropped.
const DefaultPushBuffer = 1024

// Client is the xAgent side of one data-plane WebSocket, as a host speaks
// it: it sends requests and matches answers by request_id (or reply_to, for
// packets without one); every other inbound packet (pushes, chat messages,
// error packets) is queued, in arrival order, for [Client.Next],
// [Client.NextOfType] and [Client.ExpectMessage].
//
// Make one with [Connect] (Card, dial and hello in one call) or [Dial];
// Close it to end the connection and stop its goroutine. All methods are
// safe for concurrent use.
type Client struct {
	conn    *wsconn.Conn
	done    chan struct{}
	err     error
	baseURL string       // the connector's Base URL, for the transfer plane
	apiKey  string       // the system API key, "" for none
	http    *http.Client // transfer-plane requests; keeps no idle connections

	mu         sync.Mutex
	pending    map[string]chan *protocol.Envelope
	queue      []*protocol.Envelope // unmatched packets, oldest first, at most DefaultPushBuffer
	changed    chan struct{}        // closed and replaced when queue grows
	transcript []string             // every inbound frame, bounded by MaxTranscript
}

// MaxTranscript bounds the inbound frames a Client remembers.
const MaxTranscript = 10000

// Dial connects to the /ws endpoint under baseURL (http:// or https://)
// with the optional system API key (sent as a Bearer token). The next step
// is [Client.Hello]; [Connect] does both.
func Dial(ctx context.Context, baseURL, apiKey string) (*Client, error) {
	u := strings.TrimRight(baseURL, "/") + protocol.PathWS
	u = "ws" + strings.TrimPrefix(u, "http")
	h := http.Header{}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	conn, err := wsconn.Dial(ctx, u, h, wsconn.Options{})
	if err != nil {
		return nil, fmt.Errorf("connectortest: dial: %w", err)
	}
	c := &Client{conn: conn, done: make(chan struct{}), pending: map[string]chan *protocol.Envelope{},
		changed: make(chan struct{}), baseURL: strings.TrimRight(baseURL, "/"), apiKey: apiKey,
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	go func() {
		err := conn.Run(context.Background(), c.onFrame)
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

func (c *Client) onFrame(env *protocol.Envelope, raw []byte, err error) {
	c.mu.Lock()
	if len(c.transcript) < MaxTranscript {
		c.transcript = append(c.transcript, string(raw))
	}
	if err != nil {
		c.mu.Unlock()
		return
	}
	var ch chan *protocol.Envelope
	if w, ok := c.pending["req:"+env.RequestID]; ok && env.RequestID != "" {
		ch = w
	} else if w, ok := c.pending["pkt:"+env.ReplyTo]; ok && env.ReplyTo != "" {
		ch = w
	}
	if ch == nil {
		if len(c.queue) < DefaultPushBuffer {
			c.queue = append(c.queue, env)
			close(c.changed)
			c.changed = make(chan struct{})
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	select {
	case ch <- env:
	default:
	}
}

// take removes and returns the oldest queued packet for which match
// reports true, waiting until one arrives, ctx ends or the connection has
// ended with nothing left to match.
func (c *Client) take(ctx context.Context, match func(*protocol.Envelope) bool) (*protocol.Envelope, error) {
	for {
		c.mu.Lock()
		for i, env := range c.queue {
			if match(env) {
				c.queue = append(c.queue[:i], c.queue[i+1:]...)
				c.mu.Unlock()
				return env, nil
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			// Frames read before the end are queued before done closes:
			// look once more, then give up.
			c.mu.Lock()
			for i, env := range c.queue {
				if match(env) {
					c.queue = append(c.queue[:i], c.queue[i+1:]...)
					c.mu.Unlock()
					return env, nil
				}
			}
			c.mu.Unlock()
			return nil, fmt.Errorf("connectortest: connection closed: %w", c.closeErr())
		}
	}
}

// Packet builds an envelope of type typ on channel ("" for none) with a
// fresh packet_id, the current time and payload (nil for none), to send with
// [Client.Send] or [Client.RoundTrip].
func Packet(typ, channel string, payload any) (*protocol.Envelope, error) {
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: signurl.RandomID("pkt_"),
		ConnectorChannelID: channel, Type: typ, Time: time.Now().UnixMilli()}
	if payload != nil {
		if err := env.SetPayload(payload); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// Send writes env as is.
func (c *Client) Send(ctx context.Context, env *protocol.Envelope) error {
	return c.conn.Send(ctx, env)
}

// SendRaw writes one raw text frame.
func (c *Client) SendRaw(ctx context.Context, frame []byte) error {
	return c.conn.SendRaw(ctx, frame)
}

// Request sends a request of type typ with a fresh request_id and waits
// for the packet that answers it (its ack or an error packet).
func (c *Client) Request(ctx context.Context, typ, channel string, payload any) (*protocol.Envelope, error) {
	env, err := Packet(typ, channel, payload)
	if err != nil {
		return nil, err
	}
	env.RequestID = signurl.RandomID("req_")
	return c.RoundTrip(ctx, env)
}

// RoundTrip sends env and waits for the packet whose request_id equals
// env's request_id, or, without one, whose reply_to is env's packet_id.
func (c *Client) RoundTrip(ctx context.Context, env *protocol.Envelope) (*protocol.Envelope, error) {
	key := "pkt:" + env.PacketID
	if env.RequestID != "" {
		key = "req:" + env.RequestID
	}
	ch := make(chan *protocol.Envelope, 1)
	c.mu.Lock()
	c.pending[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}()
	if err := c.conn.Send(ctx, env); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		return nil, fmt.Errorf("connectortest: connection closed: %w", c.closeErr())
	case <-ctx.Done():
		return nil, fmt.Errorf("connectortest: waiting for the answer to %s: %w", env.Type, ctx.Err())
	}
}

// Next removes and returns the oldest queued packet that answered no
// request (pushes, chat messages, error packets), waiting until one arrives,
// ctx ends or the connection has ended.
func (c *Client) Next(ctx context.Context) (*protocol.Envelope, error) {
	return c.take(ctx, func(*protocol.Envelope) bool { return true })
}

// NextOfType discards queued packets until one of type typ arrives and
// returns it. To wait for a packet without discarding the others, use
// [Client.ExpectMessage] (chat messages) or [Client.NextMatch].
func (c *Client) NextOfType(ctx context.Context, typ string) (*protocol.Envelope, error) {
	for {
		env, err := c.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("connectortest: waiting for %s: %w", typ, err)
		}
		if env.Type == typ {
			return env, nil
		}
	}
}

// NextMatch removes and returns the oldest queued packet for which match
// reports true, leaving every other packet queued, waiting until one arrives,
// ctx ends or the connection has ended.
func (c *Client) NextMatch(ctx context.Context, match func(*protocol.Envelope) bool) (*protocol.Envelope, error) {
	return c.take(ctx, match)
}

// Hello sends connector.hello and returns the ack, or the error packet's
// error as a *protocol.Error. The connector closes the socket (1008) after
// a refused hello.
func (c *Client) Hello(ctx context.Context, p protocol.HelloPayload) (*protocol.HelloAckPayload, error) {
	env, err := c.Request(ctx, protocol.TypeHello, "", p)
	if err != nil {
		return nil, err
	}
	if err := AckError(env); err != nil {
		return nil, err
	}
	var ack protocol.HelloAckPayload
	if err := env.DecodePayload(&ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// Open sends channel.open (id "" for a new channel, or an id the connector
// assigned earlier to reopen it) and returns the ack: the channel's
// connector_channel_id and its Connection Descriptor. A refusal is returned
// as a *protocol.Error.
func (c *Client) Open(ctx context.Context, id string) (*protocol.ChannelOpenAckPayload, error) {
	env, err := c.Request(ctx, protocol.TypeChannelOpen, id, protocol.EmptyPayload{})
	if err != nil {
		return nil, err
	}
	if err := AckError(env); err != nil {
		return nil, err
	}
	var ack protocol.ChannelOpenAckPayload
	if err := env.DecodePayload(&ack); err != nil {
		return nil, err
	}
	return &ack, nil
}

// AckError returns the envelope error of env as a *protocol.Error, or nil
// when env carries none.
func AckError(env *protocol.Envelope) error {
	if env.Error != nil {
		return protocol.ErrorFromWire(env.Error)
	}
	return nil
}

// Transcript returns every inbound frame so far (bounded by MaxTranscript).
func (c *Client) Transcript() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.transcript...)
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// CloseStatus returns the close code the server sent, or -1.
func (c *Client) CloseStatus() websocket.StatusCode {
	<-c.done
	return websocket.CloseStatus(c.err)
}

func (c *Client) closeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return errors.New("closed")
	}
	return c.err
}

// Close closes the connection normally (1000) and waits for its goroutines.
// Calling it again is harmless.
func (c *Client) Close() error {
	err := c.conn.Close(websocket.StatusNormalClosure, "")
	<-c.done
	return err
}
