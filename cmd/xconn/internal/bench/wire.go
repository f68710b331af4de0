package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/jsonbytes"
	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// wireClient is a minimal xAgent-side data-plane client over wsconn (the
// transport the host uses): it sends requests and matches acks by
// request_id. It measures the connector SDK alone, and carries the pings
// the host has no public API for. Safe for concurrent use.
type wireClient struct {
	conn *wsconn.Conn
	seq  atomic.Uint64
	mu   sync.Mutex
	wait map[string]chan *protocol.Envelope
	done chan struct{}
}

// maxWirePending bounds the requests a wireClient has in flight.
const maxWirePending = 1 << 16

func dialWire(ctx context.Context, baseURL string) (*wireClient, error) {
	url := "ws" + strings.TrimPrefix(baseURL, "http") + "/ws"
	conn, err := wsconn.Dial(ctx, url, nil, wsconn.Options{SendQueue: 1024})
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", url, err)
	}
	c := &wireClient{conn: conn, wait: make(map[string]chan *protocol.Envelope), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		_ = conn.Run(context.WithoutCancel(ctx), c.onFrame) // ends when the socket closes
	}()
	return c, nil
}

func (c *wireClient) onFrame(env *protocol.Envelope, _ []byte, err error) {
	if err != nil || env.RequestID == "" {
		return
	}
	c.mu.Lock()
	ch := c.wait[env.RequestID]
	delete(c.wait, env.RequestID)
	c.mu.Unlock()
	if ch != nil {
		ch <- env
	}
}

// close closes the socket and waits for its goroutines.
func (c *wireClient) close() {
	_ = c.conn.Close(websocket.StatusNormalClosure, "")
	<-c.done
}

// request sends a packet of type typ on channel with payload and waits for
// the packet answering its request_id.
func (c *wireClient) request(ctx context.Context, typ, channel string, payload any) (*protocol.Envelope, error) {
	n := c.seq.Add(1)
	id := "req_" + strconv.FormatUint(n, 36)
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_" + strconv.FormatUint(n, 36),
		RequestID: id, ConnectorChannelID: channel, Type: typ, Time: time.Now().UnixMilli()}
	if payload != nil {
		if raw, ok := payload.(json.RawMessage); ok {
			env.Payload = raw
		} else if err := env.SetPayload(payload); err != nil {
			return nil, err
		}
	}
	ch := make(chan *protocol.Envelope, 1)
	c.mu.Lock()
	if len(c.wait) >= maxWirePending {
		c.mu.Unlock()
		return nil, errors.New("bench: too many requests in flight")
	}
	c.wait[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.wait, id)
		c.mu.Unlock()
	}
	if err := c.conn.Send(ctx, env); err != nil {
		forget()
		return nil, fmt.Errorf("bench: send %s: %w", typ, err)
	}
	select {
	case ack := <-ch:
		if ack.Error != nil {
			return ack, fmt.Errorf("bench: %s: %w", typ, protocol.ErrorFromWire(ack.Error))
		}
		return ack, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-c.done:
		forget()
		return nil, fmt.Errorf("bench: %s: connection closed: %w", typ, wsconn.ErrClosed)
	}
}

// hello completes connector.hello for cardID, resuming connectorID when it
// is not empty, and returns the connector_id of the ack.
func (c *wireClient) hello(ctx context.Context, cardID, connectorID string) (string, error) {
	ack, err := c.request(ctx, protocol.TypeHello, "", protocol.HelloPayload{ConnectorCardID: cardID, ConnectorID: connectorID,
		ProtocolVersion: protocol.ProtocolVersion, SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}})
	if err != nil {
		return "", err
	}
	var p protocol.HelloAckPayload
	if err := ack.DecodePayload(&p); err != nil {
		return "", err
	}
	return p.ConnectorID, nil
}

// open opens a channel (id "" for a new one) and returns its id, after
// checking that the ack is a channel.open.ack for that channel (see
// openAckChannel).
func (c *wireClient) open(ctx context.Context, id string) (string, error) {
	// {} encoded: protocol.EmptyPayload's encoder goes through reflection.
	ack, err := c.request(ctx, protocol.TypeChannelOpen, id, json.RawMessage(`{}`))
	if err != nil {
		return "", err
	}
	return openAckChannel(ack, id)
}

// openAckChannel checks that ack answers a channel.open of channel want
// ("" for a new channel) with success and returns the channel id. The
// harness needs only the id and the outcome, so instead of decoding the
// whole Descriptor into typed structs it scans the payload for the
// members it checks: connector_channel_id, and the Descriptor's
// connection.connector_channel_id and connection.status. The envelope
// decoder has already checked that the frame, and so the payload, is valid
// JSON.
func openAckChannel(ack *protocol.Envelope, want string) (string, error) {
	if ack.Type != protocol.TypeChannelOpenAck {
		return "", fmt.Errorf("bench: channel.open answered by %q", ack.Type)
	}
	var id, descID, status []byte
	var haveID, haveDesc bool
	ok := jsonbytes.EachMember(ack.Payload, func(key, val []byte) bool {
		switch string(key) {
		case "connector_channel_id":
			id, haveID = plainString(val)
			return haveID
		case "connection_descriptor":
			return jsonbytes.EachMember(val, func(key, val []byte) bool {
				if string(key) != "connection" {
					return true
				}
				haveDesc = true
				return jsonbytes.EachMember(val, func(key, val []byte) bool {
					var ok bool
					switch string(key) {
					case "connector_channel_id":
						descID, ok = plainString(val)
						return ok
					case "status":
						status, ok = plainString(val)
						return ok
					}
					return true
				})
			})
		}
		return true
	})
	switch {
	case !ok || !haveID || !haveDesc:
		return "", fmt.Errorf("bench: channel.open.ack payload is not what the harness expects: %.200s", ack.Payload)
	case len(id) == 0 || (want != "" && string(id) != want):
		return "", fmt.Errorf("bench: channel.open.ack for channel %q answers %q", want, id)
	case string(descID) != string(id) || ack.ConnectorChannelID != string(id):
		return "", fmt.Errorf("bench: channel.open.ack of %q carries channel %q in its envelope and %q in its Descriptor",
			id, ack.ConnectorChannelID, descID)
	case len(status) == 0:
		return "", fmt.Errorf("bench: channel.open.ack of %q has no connection status", id)
	}
	// A copy of its own: the envelope's strings share one allocation, which
	// the caller would keep alive (and count as the connector's heap).
	return string(id), nil
}

// plainString returns the body of the JSON string val when it has no
// escapes (connector_channel_id and the status are plain ASCII).
func plainString(val []byte) ([]byte, bool) {
	end, esc := jsonbytes.StringEnd(val, 0)
	if end != len(val) || esc {
		return nil, false
	}
	return val[1 : len(val)-1], true
}

// signIn runs the bench form flow on an open channel.
func (c *wireClient) signIn(ctx context.Context, channel string) error {
	_, err := c.request(ctx, protocol.TypeAuthStart, channel, protocol.AuthStartPayload{
		FlowID: benchFlow, Input: map[string]string{benchField: "bench"}})
	return err
}
