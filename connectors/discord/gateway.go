package discord

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Gateway close codes the connector acts on
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes).
const (
	closeAuthenticationFailed = 4004
	closeInvalidShard         = 4010
	closeShardingRequired     = 4011
	closeInvalidAPIVersion    = 4012
	closeInvalidIntents       = 4013
	closeDisallowedIntents    = 4014
)

// eventQueue bounds the Gateway events waiting for the connector's loop;
// beyond it an event is dropped and the history fetch recovers it.
const eventQueue = 1024

type eventKind int

const (
	evMessage eventKind = iota
	evConnected
	evDisconnected
)

type gwEvent struct {
	kind eventKind
	msg  *discordgo.Message
}

// gatewayConn is one bot's Gateway connection through discordgo, made
// ownable: discordgo's Open blocks on reads without a deadline, so the
// connection's raw socket is kept and closed when the caller's context
// ends or the open takes too long; discordgo reconnects nothing by itself
// (the connector's loop reopens, and discordgo resumes with the session
// id and sequence number it kept); events reach the loop through a
// bounded queue.
type gatewayConn struct {
	s        *discordgo.Session
	timeout  time.Duration
	events   chan gwEvent
	overflow atomic.Bool

	mu  sync.Mutex
	raw net.Conn
}

func newGatewayConn(s *discordgo.Session, timeout time.Duration) *gatewayConn {
	g := &gatewayConn{s: s, timeout: timeout, events: make(chan gwEvent, eventQueue)}
	d := *s.Dialer
	d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			g.mu.Lock()
			g.raw = conn
			g.mu.Unlock()
		}
		return conn, err
	}
	s.Dialer = &d
	// discordgo runs handlers in its reading goroutine (SyncEvents): they
	// only queue.
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		g.push(gwEvent{kind: evMessage, msg: m.Message})
	})
	s.AddHandler(func(*discordgo.Session, *discordgo.Ready) { g.push(gwEvent{kind: evConnected}) })
	s.AddHandler(func(*discordgo.Session, *discordgo.Resumed) { g.push(gwEvent{kind: evConnected}) })
	s.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) { g.push(gwEvent{kind: evDisconnected}) })
	return g
}

func (g *gatewayConn) push(e gwEvent) {
	select {
	case g.events <- e:
	default:
		g.overflow.Store(true)
	}
}

func (g *gatewayConn) closeRaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raw != nil {
		g.raw.Close()
	}
}

// open connects (IDENTIFY, or RESUME when discordgo holds a session):
// it returns once READY or RESUMED arrived, or with the Gateway's
// *websocket.CloseError, or when ctx ends or the timeout passes.
func (g *gatewayConn) open(ctx context.Context) error {
	timer := time.AfterFunc(g.timeout, g.closeRaw)
	stop := context.AfterFunc(ctx, g.closeRaw)
	err := g.s.Open()
	timer.Stop()
	stop()
	if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
		return nil
	}
	if err != nil {
		if werr := wrap("GET gateway", err); isUnauthorized(werr) {
			return werr
		}
	}
	return err
}

// close closes the connection (discordgo waits a second for Discord's
// close frame) and with it discordgo's reading and heartbeat goroutines.
func (g *gatewayConn) close() {
	g.s.Close()
	g.closeRaw()
}

// terminal classifies a failed connect: a revoked token and the refusals
// no reconnect can fix end the consumer; nil means try again.
func terminal(err error) error {
	if isUnauthorized(err) {
		return fmt.Errorf("discord: the bot token was revoked: %w", connector.ErrRevoked)
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case closeAuthenticationFailed:
		return fmt.Errorf("discord: Gateway authentication failed (close 4004): %w", connector.ErrRevoked)
	case closeDisallowedIntents:
		return &connector.TerminalError{Status: protocol.StatusError,
			Err: errors.New("discord: the Gateway refused the Message Content intent (close 4014): enable it in the Developer Portal and sign in again")}
	case closeInvalidShard, closeShardingRequired, closeInvalidAPIVersion, closeInvalidIntents:
		return &connector.TerminalError{Status: protocol.StatusError, Err: fmt.Errorf("discord: the Gateway refused the connection (close %d)", ce.Code)}
	}
	return nil
}

// runGateway is the Gateway connection of one bot token, shared by every
// channel of that token (the SDK runs one per token and stops it with
// the last channel). It reconnects by itself with backoff, resuming the
// session (discordgo's session id and sequence number), and after each
// READY or RESUMED fetches what each channel missed (GET
// channels/{id}/messages?after=<the channel's last published id>), so
// that an outage, a refused RESUME or a crash loses nothing; the
// last published id is saved only after the durable publish, and the
// SDK's Publish is idempotent by message id, so nothing is published
// twice.
func (c *Connector) runGateway(ctx context.Context, token string, m *connector.Members[binding]) error {
	g := newGatewayConn(c.api.session(token), c.openTimeout)
	defer g.close()
	wait := time.Second
	for {
		err := g.open(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if t := terminal(err); t != nil {
				return t
			}
			c.log.Warn("discord: Gateway connect failed, retrying", "err", wrap("gateway", err), "retry_in", wait)
			m.Degraded(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(wait*2, c.maxReconnectWait)
			continue
		}
		wait = time.Second
		m.Connected(ctx)
		if err := c.serve(ctx, g, m); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		c.log.Info("discord: Gateway disconnected, resuming")
		m.Degraded(ctx)
	}
}

// serve handles one connection's events until it is lost (nil) or the
// token is revoked (an error wrapping ErrRevoked).
func (c *Connector) serve(ctx context.Context, g *gatewayConn, m *connector.Members[binding]) error {
	in := &inbound{c: c, s: g.s, m: m, last: map[string]string{}}
	pending := true // catch up first
	var retry <-chan time.Time
	for {
		if pending && retry == nil {
			err := in.catchUp(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case isUnauthorized(err):
				return fmt.Errorf("discord: history fetch: the bot token was revoked: %w", connector.ErrRevoked)
			case err != nil:
				c.log.Warn("discord: catch-up failed, retrying", "err", err)
				retry = time.After(DefaultCatchUpEvery)
			default:
				pending, retry = false, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-retry:
			retry = nil
		case e := <-g.events:
			switch e.kind {
			case evConnected:
				m.Connected(ctx)
				pending = true
			case evDisconnected:
				return nil
			case evMessage:
				if !pending {
					if err := in.deliver(ctx, e.msg, nil); err != nil {
						if ctx.Err() != nil {
							return nil
						}
						c.log.Warn("discord: message not published, fetching it again later", "message", e.msg.ID, "err", err)
						pending = true
					}
				}
			}
		}
		if g.overflow.Swap(false) {
			pending = true
		}
	}
}
