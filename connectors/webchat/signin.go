package webchat

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Errors the web side maps to pages and HTTP statuses.
var (
	// errLoginInvalid: the login token is unknown, used or expired.
	errLoginInvalid = errors.New("webchat: login link invalid or expired")
	// errNoRoom: no authenticated channel has this room.
	errNoRoom = errors.New("webchat: no such room")
	// errWrongCode: the access code does not match.
	errWrongCode = errors.New("webchat: wrong access code")
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

// binding is the web chat's target binding of a channel, sealed by the SDK
// (encrypted at rest, never logged). Its JSON is the one stored before the
// typed SDK, so channels signed in by earlier versions stay readable.
type binding struct {
	Kind string `json:"kind"`
	// Room and AccessCode are set for a room channel.
	Room       string `json:"room,omitempty"`
	AccessCode string `json:"access_code,omitempty" secret:"true"`
	// Sessions are the session keys (hashes of cookies) of the browsers
	// signed in by QR, newest last.
	Sessions []string `json:"sessions,omitempty"`
}

// roomLogin is the form of the room flow; the SDK derives the Card's
// fields from it.
type roomLogin struct {
	Room       string `json:"room" label:"Room name" placeholder:"lobby" help:"1 to 64 of a-z, 0-9, '-' and '_'."`
	AccessCode string `json:"access_code" label:"Access code" secret:"true" help:"People enter it to join the room. It is stored encrypted and never shown again."`
}

// openRoom signs a channel in to a room that no other channel has; the
// access code goes into the binding.
func (c *Connector) openRoom(_ context.Context, ch *connector.Channel, in roomLogin) (connector.Account[binding], error) {
	var none connector.Account[binding]
	room, ok := normalizeRoom(in.Room)
	if !ok {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"room must be 1 to %d of a-z, 0-9, '-' and '_'", MaxRoomNameLength)
	}
	if in.AccessCode == "" || len(in.AccessCode) > MaxAccessCodeLength {
		return none, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"access_code must be 1 to %d bytes", MaxAccessCodeLength)
	}
	for _, m := range c.rooms.Members(room).Channels() {
		if m.Channel.ID() != ch.ID() {
			return none, protocol.Errorf(protocol.CodeInvalidAuthInput, "room %q is already in use", room)
		}
	}
	return connector.Account[binding]{
		Binding:     binding{Kind: bindRoom, Room: room, AccessCode: in.AccessCode},
		DisplayName: "Room " + room,
		AccountHint: c.public.String() + c.base + "/rooms/" + room, // the page its users open

	}, nil
}

// page is the client of a signed-in channel: its chat page in the
// browsers. The SDK makes it on sign-in and on restore, and closes it when
// the binding ends.
type page struct {
	c  *Connector
	ch *connector.Channel
}

// newPage signs the browsers recorded in a QR binding in again (after a
// restart) and tells open streams that the chat works.
func (c *Connector) newPage(_ context.Context, ch *connector.Channel, b binding, _ connector.ClientReason) (*page, error) {
	if b.Kind == bindQR {
		now := time.Now()
		for _, key := range b.Sessions {
			c.sessions.restore(key, ch.ID(), now)
		}
	}
	c.publishStatus(ch.ID(), StateConnected, "")
	return &page{c: c, ch: ch}, nil
}

// Close signs the channel's browsers out and ends their streams (logout,
// lease expiry), unless a new sign-in of the channel replaced the binding:
// then its browsers stay.
func (p *page) Close() error {
	if cur, err := p.c.pagesOf.Get(p.ch); err == nil && cur != p {
		return nil
	}
	id := p.ch.ID()
	p.c.sessions.unbindChannel(id)
	p.c.publishStatus(id, StateSignedOut, detailSignedOut)
	p.c.hub.forget(id)
	return nil
}

func (c *Connector) publishStatus(channel, state, detail string) {
	if ev, err := newEvent(EventStatus, StatusEvent{State: state, Detail: detail}); err == nil {
		c.hub.publish(channel, ev)
	}
}

// markScanned: a browser opened the login URL.
func (c *Connector) markScanned(ctx context.Context, token string) error {
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

// confirmLogin: the browser pressed Confirm. The browser's session key
// joins the channel's QR binding (keeping the other browsers already
// signed in to the channel, at most maxQRSessionsPerChannel); it returns
// the channel.
func (c *Connector) confirmLogin(ctx context.Context, token, sessionKey string) (string, error) {
	info, err := c.srv.AuthLookup(token)
	if err != nil || !loginOpen(info) {
		return "", errLoginInvalid
	}
	b := binding{Kind: bindQR}
	if ch, err := c.srv.Channel(info.ChannelID); err == nil {
		if old, err := c.pagesOf.Binding(ch); err == nil && old.Kind == bindQR {
			b.Sessions = old.Sessions
		}
	}
	b.Sessions = appendSession(b.Sessions, sessionKey)
	acct := connector.Account[binding]{Binding: b, DisplayName: "Web Chat browser",
		AccountHint: fmt.Sprintf("%d browser(s)", len(b.Sessions))}
	if err := connector.CompleteQR(ctx, c.srv, token, acct); err != nil {
		return "", fmt.Errorf("%w: %w", errLoginInvalid, err)
	}
	return info.ChannelID, nil
}

// appendSession returns a new list: list without key, then key, at most
// maxQRSessionsPerChannel long.
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

// roomExists reports whether a signed-in channel has room.
func (c *Connector) roomExists(room string) bool {
	return len(c.rooms.Members(room).Channels()) > 0
}

// enterRoom checks the access code of room and returns its channel. The
// code is compared in constant time (as SHA-256 digests, so the length
// does not leak either).
func (c *Connector) enterRoom(room, code string) (string, error) {
	members := c.rooms.Members(room).Channels()
	if len(members) == 0 {
		return "", errNoRoom
	}
	got := sha256.Sum256([]byte(code))
	for _, m := range members {
		want := sha256.Sum256([]byte(m.Binding.AccessCode))
		if subtle.ConstantTimeCompare(want[:], got[:]) == 1 {
			return m.Channel.ID(), nil
		}
	}
	return "", errWrongCode
}

// forgetBrowser drops a browser's session key from channel's QR binding
// (a sign-out of that browser), keeping the other browsers.
func (c *Connector) forgetBrowser(ctx context.Context, channel, sessionKey string) error {
	ch, err := c.srv.Channel(channel)
	if err != nil {
		return nil // gone already
	}
	old, err := c.pagesOf.Binding(ch)
	if err != nil || old.Kind != bindQR {
		return nil
	}
	b := binding{Kind: bindQR}
	for _, k := range old.Sessions {
		if k != sessionKey {
			b.Sessions = append(b.Sessions, k)
		}
	}
	if len(b.Sessions) == len(old.Sessions) {
		return nil
	}
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("webchat: encode binding: %w", err)
	}
	raw, _ := ch.Binding()
	raw.Data = data
	raw.AccountHint = fmt.Sprintf("%d browser(s)", len(b.Sessions))
	if err := ch.UpdateBinding(ctx, raw); err != nil {
		return fmt.Errorf("webchat: update binding: %w", err)
	}
	return nil
}

// QRBrowsers reports how many browsers are signed in to channel by QR: the
// ones recorded in its binding, which stay signed in across restarts (0
// for an unknown channel, a room or a channel whose browsers all signed
// out). A program that resumes a channel asks for a new QR sign-in only
// when it is 0.
func (c *Connector) QRBrowsers(channel string) int {
	ch, err := c.srv.Channel(channel)
	if err != nil || !ch.Authenticated() {
		return 0
	}
	b, err := c.pagesOf.Binding(ch)
	if err != nil || b.Kind != bindQR {
		return 0
	}
	return len(b.Sessions)
}
