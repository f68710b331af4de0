package webchat

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Binding kinds.
const (
	bindQR   = "qr"
	bindRoom = "room"
)

// maxQRSessionsPerChannel bounds the browsers recorded in one QR binding;
// the oldest sign-in is forgotten beyond it.
const maxQRSessionsPerChannel = 16

// MaxAccessCodeLength bounds a room access code.
const MaxAccessCodeLength = 256

// bindingData is the web chat's target binding of a channel, kept by the
// SDK in the store's encrypted Binding. It holds secrets (the access code)
// and is never logged.
type bindingData struct {
	Kind string `json:"kind"`
	// Room and AccessCode are set for a room channel.
	Room       string `json:"room,omitempty"`
	AccessCode string `json:"access_code,omitempty"`
	// Sessions are the session keys (hashes of cookies) of the browsers
	// signed in by QR, newest last.
	Sessions []string `json:"sessions,omitempty"`
}

func decodeBinding(b connector.Binding) (bindingData, error) {
	var d bindingData
	if err := json.Unmarshal(b.Data, &d); err != nil {
		return d, fmt.Errorf("webchat: decode binding: %w", err)
	}
	return d, nil
}

func encodeBinding(d bindingData) []byte {
	b, _ := json.Marshal(d) // a struct of strings always encodes
	return b
}

// roomIndex maps room names to their channels. It is rebuilt from bound
// channels at start (OnBind) and bounded by the store's channel limit.
// Safe for concurrent use.
type roomIndex struct {
	mu     sync.Mutex
	byRoom map[string]string
	byChan map[string]string
}

func newRoomIndex() *roomIndex {
	return &roomIndex{byRoom: make(map[string]string), byChan: make(map[string]string)}
}

// reserve binds room to channel unless another channel has it.
func (x *roomIndex) reserve(room, channel string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cur, ok := x.byRoom[room]; ok && cur != channel {
		return false
	}
	if old, ok := x.byChan[channel]; ok && old != room {
		delete(x.byRoom, old)
	}
	x.byRoom[room] = channel
	x.byChan[channel] = room
	return true
}

func (x *roomIndex) channel(room string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.byRoom[room]
	return ch, ok
}

func (x *roomIndex) drop(channel string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if room, ok := x.byChan[channel]; ok {
		delete(x.byRoom, room)
		delete(x.byChan, channel)
	}
}

// openRoom is the room flow's FormFunc: it checks the room name, reserves
// it for the channel and returns the binding with the access code (stored
// encrypted, redacted from logs).
func (c *Connector) openRoom(_ context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
	room, ok := normalizeRoom(in.Get("room"))
	if !ok {
		return connector.Binding{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"room must be 1 to %d of a-z, 0-9, '-' and '_'", MaxRoomNameLength)
	}
	code := in.Secret("access_code")
	if code == "" || len(code) > MaxAccessCodeLength {
		return connector.Binding{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"access_code must be 1 to %d bytes", MaxAccessCodeLength)
	}
	if !c.rooms.reserve(room, ch.ID()) {
		return connector.Binding{}, protocol.Errorf(protocol.CodeInvalidAuthInput, "room %q is already in use", room)
	}
	return connector.Binding{
		Data:        encodeBinding(bindingData{Kind: bindRoom, Room: room, AccessCode: code}),
		DisplayName: "Room " + room,
		AccountHint: c.webPath + "/rooms/" + room,
		Secrets:     []string{code},
	}, nil
}

// onBind runs after a sign-in and, at start, for restored channels: it
// indexes rooms and restores QR-signed-in browsers.
func (c *Connector) onBind(_ context.Context, ch *connector.Channel, b connector.Binding) error {
	d, err := decodeBinding(b)
	if err != nil {
		return err
	}
	switch d.Kind {
	case bindRoom:
		if !c.rooms.reserve(d.Room, ch.ID()) {
			return fmt.Errorf("webchat: room %q is bound to two channels", d.Room)
		}
	case bindQR:
		now := time.Now()
		for _, key := range d.Sessions {
			c.sessions.restore(key, ch.ID(), now)
		}
	}
	c.publishStatus(ch.ID(), ch.Status(), "")
	return nil
}

// onUnbind runs before a binding is cleared (logout, replacement, lease
// expiry): browsers of the channel are signed out.
func (c *Connector) onUnbind(_ context.Context, ch *connector.Channel, _ connector.Binding, reason connector.UnbindReason) error {
	if reason == connector.UnbindReplaced {
		return nil // a new sign-in of the same channel: keep its browsers
	}
	c.rooms.drop(ch.ID())
	c.sessions.unbindChannel(ch.ID())
	c.publishStatus(ch.ID(), protocol.StatusRevoked, "This chat was signed out.")
	c.hub.forget(ch.ID())
	return nil
}

func (c *Connector) publishStatus(channel, state, detail string) {
	if ev, err := newEvent(EventStatus, StatusEvent{State: state, Detail: detail}); err == nil {
		c.hub.publish(channel, ev)
	}
}

// loginScanned implements backend: a browser opened the login URL.
func (c *Connector) loginScanned(ctx context.Context, token string) error {
	info, err := c.srv.AuthLookup(token)
	if err != nil || !loginOpen(info) {
		return errLoginInvalid
	}
	if info.Status == protocol.AuthScanned {
		return nil // the page was reloaded
	}
	if err := c.srv.AuthScanned(ctx, token); err != nil {
		return fmt.Errorf("%w: %w", errLoginInvalid, err)
	}
	return nil
}

// loginOpen reports whether a QR sign-in can still be confirmed.
func loginOpen(info connector.AuthInfo) bool {
	if info.FlowID != FlowQR || !time.Now().Before(info.ExpiresAt) {
		return false
	}
	return info.Status == protocol.AuthPending || info.Status == protocol.AuthScanned
}

// loginConfirm implements backend: the browser pressed Confirm. The
// browser's session key joins the channel's QR binding (keeping the other
// browsers already signed in to the channel, at most
// maxQRSessionsPerChannel).
func (c *Connector) loginConfirm(ctx context.Context, token, sessionKey string) (string, error) {
	info, err := c.srv.AuthLookup(token)
	if err != nil || !loginOpen(info) {
		return "", errLoginInvalid
	}
	d := bindingData{Kind: bindQR}
	if ch, err := c.srv.Channel(info.ChannelID); err == nil {
		if b, ok := ch.Binding(); ok {
			if old, err := decodeBinding(b); err == nil && old.Kind == bindQR {
				d.Sessions = old.Sessions
			}
		}
	}
	d.Sessions = appendSession(d.Sessions, sessionKey)
	b := connector.Binding{
		Data:        encodeBinding(d),
		DisplayName: "Web Chat browser",
		AccountHint: fmt.Sprintf("%d browser(s)", len(d.Sessions)),
	}
	if err := c.srv.AuthComplete(ctx, token, b); err != nil {
		return "", fmt.Errorf("%w: %w", errLoginInvalid, err)
	}
	c.log.Info("webchat: browser signed in by QR", "channel", info.ChannelID)
	return info.ChannelID, nil
}

func appendSession(list []string, key string) []string {
	out := make([]string, 0, len(list)+1)
	for _, k := range list {
		if k != key {
			out = append(out, k)
		}
	}
	out = append(out, key)
	if n := len(out) - maxQRSessionsPerChannel; n > 0 {
		out = out[n:]
	}
	return out
}

// roomExists implements backend.
func (c *Connector) roomExists(_ context.Context, room string) bool {
	_, ok := c.rooms.channel(room)
	return ok
}

// enterRoom implements backend: the access code is compared in constant
// time (as SHA-256 digests, so the length does not leak either).
func (c *Connector) enterRoom(_ context.Context, room, code string) (string, error) {
	id, ok := c.rooms.channel(room)
	if !ok {
		return "", errNoRoom
	}
	ch, err := c.srv.Channel(id)
	if err != nil {
		return "", errNoRoom
	}
	b, ok := ch.Binding()
	if !ok {
		return "", errNoRoom
	}
	d, err := decodeBinding(b)
	if err != nil || d.Kind != bindRoom || d.Room != room {
		return "", errNoRoom
	}
	want := sha256.Sum256([]byte(d.AccessCode))
	got := sha256.Sum256([]byte(code))
	if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
		return "", errWrongCode
	}
	return id, nil
}
