package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// HostOptions configure [StartHost]. The zero value runs the echo agent.
type HostOptions struct {
	// Agent answers the users' messages (default host.Echo{}, as xconn
	// host --agent echo runs it).
	Agent host.Agent
	// Secrets must never appear in a packet the connector sends the host
	// (a Descriptor, an ack, an error) nor in the host's logs; the test
	// fails when one does.
	Secrets Secrets
	// OnPacket, when set, sees every packet as host.Options.OnPacket does.
	OnPacket host.PacketObserver
}

// Host is an in-process xAgent host (package host) on a SQLite store in
// the test's directory, with fast reconnects, that counts the chat acks it
// sees and checks every packet the connector sends it for secrets. Make it
// with [StartHost]; it closes when the test ends. The embedded *host.Host
// is the whole host API (Admit, Connect, Channels, Invoke, ...). Safe for
// concurrent use.
type Host struct {
	*host.Host
	// Logs holds the host's log lines.
	Logs *Logs

	tb         testing.TB
	secrets    Secrets
	mu         sync.Mutex
	acks       map[ackKey]int
	frames     []string // packets the connector sent, as JSON, at most MaxFrameBytes
	frameBytes int
}

// MaxFrameBytes bounds the packets a [Host] keeps to check for secrets;
// later packets are checked as they arrive against HostOptions.Secrets only.
const MaxFrameBytes = 32 << 20

type ackKey struct {
	dir    protocol.Direction
	status protocol.AckStatus
}

// StartHost starts a host and closes it (failing the test on an error)
// when tb ends.
func StartHost(tb testing.TB, opts HostOptions) *Host {
	tb.Helper()
	db := connectortest.NewStore(tb) // a SQLite store, as the connector's
	if opts.Agent == nil {
		opts.Agent = host.Echo{}
	}
	h := &Host{Logs: &Logs{}, tb: tb, secrets: opts.Secrets, acks: map[ackKey]int{}}
	var err error
	h.Host, err = host.New(host.Options{Store: db, Delivery: db, Agent: opts.Agent, FilesDir: tb.TempDir(),
		Logger: h.Logs.Logger(), ReconnectMin: 50 * time.Millisecond, ReconnectMax: 250 * time.Millisecond,
		OnPacket: func(dir protocol.Direction, cardID string, env *protocol.Envelope) {
			h.observe(dir, env)
			if opts.OnPacket != nil {
				opts.OnPacket(dir, cardID, env)
			}
		}})
	if err != nil {
		tb.Fatalf("e2e: host: %v", err)
	}
	if err := h.Start(context.Background()); err != nil {
		tb.Fatalf("e2e: host start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Wait)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			tb.Errorf("e2e: host close: %v", err)
		}
		h.CheckSecrets(tb, h.secrets)
		if tb.Failed() {
			tb.Logf("the host logged:\n%s", h.Logs.String())
		}
	})
	return h
}

func (h *Host) observe(dir protocol.Direction, env *protocol.Envelope) {
	var frame string
	if dir == protocol.ToHost {
		if b, err := json.Marshal(env); err == nil {
			frame = string(b)
		}
	}
	var ack protocol.ChatAckPayload
	isAck := env.Type == protocol.TypeChatMessageAck && env.DecodePayload(&ack) == nil
	h.mu.Lock()
	defer h.mu.Unlock()
	if isAck {
		h.acks[ackKey{dir, ack.Status}]++
	}
	switch {
	case frame == "":
	case h.frameBytes+len(frame) <= MaxFrameBytes:
		h.frames = append(h.frames, frame)
		h.frameBytes += len(frame)
	default:
		if line, ok := h.secrets.Find(frame); ok {
			h.tb.Errorf("a secret is in a packet the connector sent: %s", line)
		}
	}
}

// CheckSecrets fails the test when a packet the connector sent the host (a
// Descriptor, an ack, an error, a tool result) or a host log line holds
// one of s. StartHost's cleanup runs it with HostOptions.Secrets; call it
// for secrets known only later (tokens a fake issued).
func (h *Host) CheckSecrets(tb testing.TB, s Secrets) {
	tb.Helper()
	h.mu.Lock()
	frames := strings.Join(h.frames, "\n")
	h.mu.Unlock()
	s.Check(tb, "a packet the connector sent", frames)
	s.Check(tb, "the host's logs", h.Logs.String())
}

// Acks returns how many chat.message.ack with status the host saw in
// direction dir: protocol.ToConnector are the host's acks of the
// connector's user messages, protocol.ToHost the connector's acks of the
// host's assistant finals.
func (h *Host) Acks(dir protocol.Direction, status protocol.AckStatus) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.acks[ackKey{dir, status}]
}

// Online reports whether the host's data plane to connector cardID is up.
func (h *Host) Online(cardID string) bool {
	c, ok := h.Connector(cardID)
	return ok && c.Link == host.LinkOnline
}

// AdmitConnector admits the connector at url with apiKey and returns its
// connector_card_id; an error fails the test.
func (h *Host) AdmitConnector(url, apiKey string) string {
	h.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	c, err := h.Admit(ctx, url, apiKey)
	if err != nil {
		h.tb.Fatalf("e2e: admit %s: %v", url, err)
	}
	return c.CardID
}

// SignIn signs user in to connector cardID as an xAgent user does: a form
// flow with s.Input, or a QR flow whose codes s.Confirm confirms (see
// [SignIn]). It returns the persisted user channel, or the sign-in's error
// (a refused one carries the connector's message).
func (h *Host) SignIn(ctx context.Context, user, cardID string, s SignIn) (store.UserChannel, error) {
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	si, err := h.Connect(ctx, user, cardID, s.Flow, s.Input)
	if err != nil {
		return store.UserChannel{}, err
	}
	if s.Confirm != nil {
		if err := confirmCodes(ctx, si, s.Confirm); err != nil {
			_ = si.Cancel(context.WithoutCancel(ctx))
			return store.UserChannel{}, err
		}
	}
	uc, err := si.Wait(ctx)
	if err == nil && !uc.Authenticated {
		err = errors.New("e2e: the sign-in ended without an authenticated channel")
	}
	return uc, err
}

// confirmCodes hands each new QR code of si to confirm until the sign-in
// ends.
func confirmCodes(ctx context.Context, si *host.Signin, confirm func(context.Context, string) error) error {
	last := ""
	for {
		st := si.State()
		if st.QRCodeText != "" && st.QRCodeText != last {
			last = st.QRCodeText
			if err := confirm(ctx, last); err != nil {
				return fmt.Errorf("e2e: confirm the QR code: %w", err)
			}
		}
		if st.Done || st.Status == protocol.AuthAuthenticated {
			return nil
		}
		select {
		case _, ok := <-si.Updates():
			if !ok {
				return nil // ended: Wait reports how
			}
		case <-time.After(PollInterval):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
