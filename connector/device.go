package connector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Device Profile v1 §5 asks for one stable error code each for a device
// that is offline, a command that timed out and a permission the device
// refuses; the Profile does not name them. These are the SDK's codes, the
// same for every device connector built on it. A handler returns them as
// a *protocol.Error (protocol.Errorf(connector.CodeDeviceOffline, ...));
// the SDK itself refuses a call on a channel whose device state is
// DeviceOffline or DevicePermissionDenied with the matching code.
const (
	// CodeDeviceOffline: the bound device is not reachable now (unplugged,
	// switched off, out of network, or its bridge is down). The binding
	// stays; retry when the Descriptor says the device is back.
	CodeDeviceOffline protocol.Code = "device_offline"
	// CodeDeviceCommandTimeout: the device did not finish a command in
	// its time limit. Whether a control command took effect is unknown;
	// observe before acting again.
	CodeDeviceCommandTimeout protocol.Code = "device_command_timeout"
	// CodeDevicePermissionDenied: the device (or its platform) refuses the
	// connector, such as an Android phone that has not accepted this
	// computer's USB debugging key. A person must act on the device.
	CodeDevicePermissionDenied protocol.Code = "device_permission_denied"
)

// DeviceState is the availability of the device bound to a channel, as
// a device connector observes it (Device Profile v1 §3: the Descriptor
// reflects whether the device is bound, online and available).
type DeviceState string

// Device states. A channel that is not signed in has no device (not
// bound); [Channel.DeviceState] returns "" for it.
const (
	// DeviceAvailable: bound, online and usable. The channel is connected
	// and its tools follow the usual rules.
	DeviceAvailable DeviceState = "available"
	// DeviceOffline: bound, not reachable. The channel is offline; every
	// tool that is not Public is unavailable with the reason given, and a
	// call is refused with CodeDeviceOffline.
	DeviceOffline DeviceState = "offline"
	// DevicePermissionDenied: bound and reachable, but the device refuses
	// the connector. The channel is offline; every tool that is not
	// Public is denied_by_target with target_permission_state denied, and
	// a call is refused with CodeDevicePermissionDenied.
	DevicePermissionDenied DeviceState = "permission_denied"
)

// SetDeviceState records what the connector observed of the channel's
// device: it sets the connection status (connected or offline) and the
// availability of every tool that is not Public in one step, and pushes
// the corrected Descriptor when anything changed (connection.descriptor.push).
// reason is a secret-free explanation shown in the tools' states (the
// default names the state). Setting the same state again changes nothing,
// so a watcher may call it on every observation. It replaces per-tool
// overrides set with SetToolAvailability. A channel that is not signed in
// is refused with connection_not_authenticated.
func (c *Channel) SetDeviceState(ctx context.Context, st DeviceState, reason string) error {
	s := c.srv
	status := protocol.StatusConnected
	var avail ToolAvailability
	switch st {
	case DeviceAvailable:
	case DeviceOffline:
		if reason == "" {
			reason = "the device is offline"
		}
		status, avail = protocol.StatusOffline, ToolAvailability{Status: protocol.ToolUnavailable, Permission: protocol.PermissionUnknown, Reason: reason}
	case DevicePermissionDenied:
		if reason == "" {
			reason = "the device refuses this connector"
		}
		status, avail = protocol.StatusOffline, ToolAvailability{Status: protocol.ToolDeniedByTarget, Permission: protocol.PermissionDenied, Reason: reason}
	default:
		return fmt.Errorf("connector: unknown device state %q", st)
	}
	want := map[string]ToolAvailability{}
	if avail != (ToolAvailability{}) {
		s.mu.Lock()
		for id, e := range s.tools {
			if !e.opts.Public {
				want[id] = avail
			}
		}
		s.mu.Unlock()
	}
	cur, err := s.channelState(c.id)
	if err != nil {
		return err
	}
	if !isAuthenticated(cur.rec.Status) {
		return protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s is not signed in", c.id)
	}
	if cur.rec.Status == status && sameOverrides(cur.tools, want) {
		return nil
	}
	_, err = s.update(ctx, c.id, func(cs *chanState) error {
		if !isAuthenticated(cs.rec.Status) {
			return protocol.Errorf(protocol.CodeConnectionNotAuthenticated, "channel %s is not signed in", c.id)
		}
		cs.rec.Status = status
		cs.tools = nil
		if len(want) > 0 {
			cs.tools = want
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.pushDescriptor(ctx, c.id)
	return nil
}

func sameOverrides(a, b map[string]ToolAvailability) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// DeviceState returns the state of the channel's device as SetDeviceState
// and the connection status say: "" when the channel is not signed in,
// DevicePermissionDenied when its tools are denied by the target,
// DeviceOffline when it is offline, else DeviceAvailable.
func (c *Channel) DeviceState() DeviceState {
	snap, err := c.srv.channelState(c.id)
	if err != nil || !isAuthenticated(snap.rec.Status) {
		return ""
	}
	return deviceStateOf(snap)
}

func deviceStateOf(snap chanSnap) DeviceState {
	for _, a := range snap.tools {
		if a.Permission == protocol.PermissionDenied {
			return DevicePermissionDenied
		}
	}
	if snap.rec.Status == protocol.StatusOffline {
		return DeviceOffline
	}
	return DeviceAvailable
}

// unavailableError is the refusal of a call to a tool that is not
// available on the channel: for a device connector (a Card declaring
// xagent.device.v1), the device code of the channel's state; otherwise
// connector_channel_unavailable.
func (s *Server) unavailableError(toolID string, snap chanSnap, st protocol.ToolState) *protocol.Error {
	if s.card.DeclaresProfile(protocol.ProfileDeviceV1) && st.Status != protocol.ToolNotSupported {
		switch deviceStateOf(snap) {
		case DevicePermissionDenied:
			return protocol.Errorf(CodeDevicePermissionDenied, "tool %s: %s", toolID, st.Reason)
		case DeviceOffline:
			return protocol.Errorf(CodeDeviceOffline, "tool %s: %s", toolID, st.Reason)
		}
	}
	return protocol.Errorf(protocol.CodeConnectorChannelUnavailable, "tool %s is %s on this channel", toolID, st.Status)
}

// CacheMedia stores a file a device tool produced (a screenshot, a
// recording, a pulled file) on the transfer plane and returns its
// file_ref with a signed download_url, as Device Profile v1 §6 requires
// (media never travels in a payload or as base64). The file lives for ttl
// (at most Options.FileTTL; 0 means FileTTL) and at most
// Options.MaxUploadBytes; the janitor deletes it after, and
// [Channel.DeleteFile] earlier. A channel that is not signed in is
// refused.
func (c *Channel) CacheMedia(ctx context.Context, f OutgoingFile, ttl time.Duration) (protocol.ChatFile, error) {
	s := c.srv
	if err := s.liveErr(); err != nil {
		return protocol.ChatFile{}, err
	}
	if f.Content == nil {
		return protocol.ChatFile{}, errors.New("connector: file has no content")
	}
	if err := s.signedIn(c.id, "CacheMedia"); err != nil {
		return protocol.ChatFile{}, err
	}
	if ttl <= 0 || ttl > s.opts.FileTTL {
		ttl = s.opts.FileTTL
	}
	rec, err := s.saveFile(ctx, c.id, "download", f.Name, f.MimeType, f.Type, f.Content, ttl)
	if err != nil {
		return protocol.ChatFile{}, err
	}
	return protocol.ChatFile{
		Type: rec.FileType, FileRef: rec.Ref, Filename: rec.Filename, MimeType: rec.MimeType,
		ByteSize: rec.Size, ExpiresAt: rec.ExpiresAt.UnixMilli(),
		DownloadURL: s.downloadURL(rec.Ref, c.id, rec.ExpiresAt),
	}, nil
}

// DeleteFile removes a transfer-plane file of this channel before its
// TTL (a connector bounding its media cache evicts the oldest). An
// unknown or foreign ref is not an error: the file is gone either way.
func (c *Channel) DeleteFile(ctx context.Context, fileRef string) error {
	s := c.srv
	f, err := s.opts.Store.GetFile(ctx, s.cardID(), fileRef)
	if errors.Is(err, store.ErrNotFound) || (err == nil && f.ChannelID != c.id) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("connector: look up file: %w", err)
	}
	if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("connector: remove file: %w", err)
	}
	if err := s.opts.Store.DeleteFile(ctx, s.cardID(), fileRef); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("connector: delete file record: %w", err)
	}
	return nil
}
