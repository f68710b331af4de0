package adb

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xconn/xconn/connector"
	adbc "github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/protocol"
)

// Login is the adb_device_binding form.
type Login struct {
	Serial string `json:"serial" label:"Device Serial" input:"text" placeholder:"For example, emulator-5554 or R58M12ABCDE" help:"Enable USB debugging on the phone, connect it, accept the RSA prompt, then copy its serial from adb devices."`
}

// binding is what a channel keeps after sign-in. The serial is a device
// fact the connector owns (Device Profile v1 §3): no tool takes it as an
// argument.
type binding struct {
	Serial string `json:"serial"`
	Model  string `json:"model"`
}

// serialPattern accepts what adb prints as serials: USB serials,
// emulator-5554, host:port of adb connect and mDNS names.
var serialPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$`)

// device is a channel's client: the bound serial on the shared ADB client.
// Its act lock serialises control commands on the device even across
// sockets (the SDK serialises them per channel and socket).
type device struct {
	c      *Connector
	ch     *connector.Channel
	serial string
	actMu  sync.Mutex

	// reports counts the device states a tool call reported (after a
	// failure); the watcher drops an observation made before the latest.
	reports atomic.Uint64

	mu    sync.Mutex
	shots []string // live screenshot file_refs, oldest first
}

// signIn checks that the device is attached and authorised, and binds
// the channel to it. Every refusal is a secret-free *protocol.Error
// saying what to do.
func (c *Connector) signIn(ctx context.Context, ch *connector.Channel, in Login) (connector.Account[binding], error) {
	serial := strings.TrimSpace(in.Serial)
	if !serialPattern.MatchString(serial) {
		return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
			"serial must be a device serial as `adb devices` prints it (letters, digits, '.', '_', ':', '-'), such as emulator-5554")
	}
	// One channel per device (the SDK enforces it atomically too, with
	// Consumer.MaxChannels); this says so before touching the device.
	for _, m := range c.devices.Members(serial).Channels() {
		if m.Channel.ID() != ch.ID() {
			return connector.Account[binding]{}, protocol.Errorf(protocol.CodeInvalidAuthInput,
				"device %s is already bound to another channel: a device serves one channel at a time, so sign that channel out first", serial)
		}
	}
	d, err := c.checkDevice(ctx, serial)
	if err != nil {
		return connector.Account[binding]{}, err
	}
	model := strings.ReplaceAll(d.Model, "_", " ")
	out, err := c.exec(ctx, serial, c.cmdTimeout, MaxCommandOutput, "getprop", "ro.product.model")
	if err == nil {
		if m := strings.TrimSpace(string(out)); m != "" {
			model = m
		}
	}
	name := model
	if name == "" {
		name = Label
	}
	acct := connector.Account[binding]{
		Binding:     binding{Serial: serial, Model: model},
		DisplayName: name,
		AccountHint: connector.Hint(serial),
	}
	if err == nil {
		// The device has just answered a command: the channel's client
		// needs no second check.
		return c.clients.With(acct, &device{c: c, ch: ch, serial: serial}), nil
	}
	return acct, nil
}

// checkDevice requires serial to be listed and usable, with the message a
// person needs otherwise.
func (c *Connector) checkDevice(ctx context.Context, serial string) (adbc.Device, error) {
	d, err := c.adb.Device(ctx, serial)
	if err != nil {
		if k, _ := adbc.KindOf(err); k == adbc.KindNotFound {
			return d, protocol.Errorf(protocol.CodeInvalidAuthInput,
				"no device %s is attached to the ADB server at %s: connect it by USB (or adb connect), enable USB debugging, and check that `adb devices` lists it", serial, c.adb.Addr())
		}
		return d, c.deviceError(err, serial)
	}
	switch d.State {
	case adbc.StateDevice:
		return d, nil
	case adbc.StateUnauthorized, adbc.StateAuthorizing:
		return d, protocol.Errorf(connector.CodeDevicePermissionDenied,
			"device %s has not authorised this computer: unlock the phone, accept the \"Allow USB debugging?\" RSA key prompt (tick \"Always allow\"), then sign in again", serial)
	case adbc.StateNoPermissions:
		return d, protocol.Errorf(connector.CodeDevicePermissionDenied,
			"the connector's machine has no USB permission for device %s: fix the udev rules (Linux) and reconnect it", serial)
	}
	return d, &protocol.Error{Code: connector.CodeDeviceOffline, Retryable: true,
		Message: fmt.Sprintf("device %s is %s: reconnect it (unplug and plug in, or adb reconnect) and try again", serial, d.State)}
}

// newClient is the channel's client: on sign-in and on every restore it
// verifies that the device is reachable, so a restored channel reports
// connected only once its device answers (Device Profile v1 §5).
func (c *Connector) newClient(ctx context.Context, ch *connector.Channel, b binding, _ connector.ClientReason) (*device, error) {
	if _, err := c.checkDevice(ctx, b.Serial); err != nil {
		return nil, err
	}
	if _, err := c.exec(ctx, b.Serial, c.cmdTimeout, MaxCommandOutput, "getprop", "ro.build.version.sdk"); err != nil {
		return nil, c.deviceError(err, b.Serial)
	}
	return &device{c: c, ch: ch, serial: b.Serial}, nil
}

// Close forgets the screenshot list (the SDK deletes the channel's files
// with the channel; the rest expire).
func (d *device) Close() error {
	d.mu.Lock()
	d.shots = nil
	d.mu.Unlock()
	return nil
}
