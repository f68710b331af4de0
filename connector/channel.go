package connector

import (
	"context"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Channel is a handle on one user-level channel (connector_channel_id) of
// this connector. Handles are cheap values around the Server's state; all
// methods are safe for concurrent use. A handle of a channel that was
// deleted (lease expiry) returns connection_not_found errors.
type Channel struct {
	srv *Server
	id  string
}

// ID returns the connector_channel_id.
func (c *Channel) ID() string { return c.id }

// Server returns the server that owns the channel.
func (c *Channel) Server() *Server { return c.srv }

// ToolAvailability overrides the availability of one tool on a channel.
type ToolAvailability struct {
	Status     protocol.ToolStatus
	Permission protocol.PermissionState
	// Reason is a secret-free explanation.
	Reason string
}

// Status returns the channel's connection status (created, connected, ...).
func (c *Channel) Status() protocol.ConnectionStatus {
	st, err := c.srv.channelState(c.id)
	if err != nil {
		return ""
	}
	return st.rec.Status
}

// Authenticated reports whether the channel is bound to a signed-in
// target (status connected, degraded, offline or error).
func (c *Channel) Authenticated() bool { return isAuthenticated(c.Status()) }

// Binding returns the channel's target binding (a copy), and false when the
// channel is not signed in.
func (c *Channel) Binding() (Binding, bool) {
	st, err := c.srv.channelState(c.id)
	if err != nil || !isAuthenticated(st.rec.Status) {
		return Binding{}, false
	}
	return st.binding.clone(), true
}

// Descriptor computes the channel's current, validated Connection
// Descriptor.
func (c *Channel) Descriptor(ctx context.Context) (*protocol.Descriptor, error) {
	return c.srv.descriptor(ctx, c.id)
}

// SetStatus changes the connection status (for example offline when the
// target disconnects, expired when its token expires) and pushes the new
// Descriptor when the channel is open. Setting created, expired or revoked
// keeps the binding; use Logout to clear it.
func (c *Channel) SetStatus(ctx context.Context, status protocol.ConnectionStatus) error {
	return c.srv.setStatus(ctx, c.id, status)
}

// SetToolAvailability overrides one tool's availability on this channel
// and pushes the new Descriptor. A zero ToolAvailability removes the
// override.
func (c *Channel) SetToolAvailability(ctx context.Context, toolID string, a ToolAvailability) error {
	return c.srv.setToolAvailability(ctx, c.id, toolID, a)
}

// UpdateBinding replaces the binding of a signed-in channel (for example a
// refreshed token) and pushes the Descriptor when display data changed.
func (c *Channel) UpdateBinding(ctx context.Context, b Binding) error {
	return c.srv.updateBinding(ctx, c.id, b)
}

// Logout clears the target binding (as auth.logout does), runs the unbind
// hook and pushes the post-logout Descriptor.
func (c *Channel) Logout(ctx context.Context) error {
	_, err := c.srv.logout(ctx, c.id, UnbindLogout)
	return err
}

// Publish hands one inbound target message to xAgent (IM v2 chat.message).
// The message is stored in the durable outbox before Publish returns and is
// delivered when the channel is open, redelivered after reconnects, until
// xAgent answers accepted or duplicate, the TTL passes or capacity evicts
// it. Files are cached on the transfer plane first. A channel that is not
// signed in is refused with a *protocol.Error (connection_not_authenticated)
// and nothing is stored.
//
// Publishing a MessageID again is a no-op while the message is pending
// and, after it left the outbox, within the dedupe window: the outbox
// remembers the outcomes of the connector's last Options.DedupeHistory
// messages (default 10,000, all channels together) for
// Options.DedupeWindow (default 24 h). Past either bound the MessageID is
// forgotten and publishing it again sends the message anew, so a target
// that can redeliver an event later than that (a replayed poll offset, a
// retried webhook) needs a larger window, or its own record of what it
// published.
func (c *Channel) Publish(ctx context.Context, m UserMessage) error {
	return c.srv.publish(ctx, c.id, m)
}

// PushMessage sends a legacy IM v1 message.push for a connector whose Card
// declares xagent.im.v1. It is kept in the outbox until written to an open
// channel whose socket negotiated IM v1 (message.push has no ack): queued
// is not enough, the frame's last byte must have reached the socket. A
// channel that is not signed in is refused (connection_not_authenticated).
// Provider, Profile, EventKind, MessageType and MessageID are filled in when
// empty. The rest is held to IM v1 section 5 before anything is stored:
// SenderID, and Text or Content, are required (RawText is the original
// text, "" when the message has none); at most one target Session
// reference; every file needs FileRef and DownloadURL or URL. A message
// that breaks a rule is refused with an invalid_packet *protocol.Error
// naming each broken rule.
func (c *Channel) PushMessage(ctx context.Context, m protocol.MessagePushPayload) error {
	return c.srv.pushMessage(ctx, c.id, m)
}

// CacheFile stores an inbound target file on the transfer plane now (an
// expiring target CDN URL cannot be relied on later) and returns its
// chat file item with a signed, short-lived download_url, for example for
// the files of an IM v1 message.push. Publish does this itself.
func (c *Channel) CacheFile(ctx context.Context, f OutgoingFile) (protocol.ChatFile, error) {
	return c.srv.cacheFile(ctx, c.id, f)
}

// OpenFile looks up a live transfer-plane file bound to this channel (for
// example a file_ref a tool received); read it with File.Open. Unknown,
// expired or foreign refs fail with a *protocol.Error.
func (c *Channel) OpenFile(ctx context.Context, fileRef string) (*File, error) {
	return c.srv.openFile(ctx, c.id, fileRef)
}

func isAuthenticated(s protocol.ConnectionStatus) bool {
	switch s {
	case protocol.StatusConnected, protocol.StatusDegraded, protocol.StatusOffline, protocol.StatusError:
		return true
	}
	return false
}

// SignedInAt returns when the channel's current binding was made by a
// sign-in (kept across restarts and token refreshes with UpdateBinding),
// and false when the channel holds no binding or its binding was stored
// before the SDK recorded the time. The Descriptor carries it too, as
// the extension member connection.x-signed-in-at (Unix milliseconds).
func (c *Channel) SignedInAt() (time.Time, bool) {
	b, ok := c.srv.keptBinding(c.id)
	if !ok || b.signedInAt.IsZero() {
		return time.Time{}, false
	}
	return b.signedInAt, true
}
