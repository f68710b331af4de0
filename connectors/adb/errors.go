package adb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/xconn/xconn/connector"
	adbc "github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/protocol"
)

// exec runs argv on serial within timeout, reading at most limit bytes.
// Errors are the adb client's; callers classify them with deviceError.
func (c *Connector) exec(ctx context.Context, serial string, timeout time.Duration, limit int64, argv ...string) ([]byte, error) {
	cctx, cancel := c.cmdCtx(ctx, timeout)
	defer cancel()
	out, err := c.adb.Exec(cctx, serial, limit, argv...)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		// The command's own deadline, not the caller's.
		return out, fmt.Errorf("%s: %w", argv[0], errCommandTimeout)
	}
	return out, err
}

var errCommandTimeout = errors.New("device command timed out")

// deviceError turns an adb failure into the stable, secret-free wire
// error of Device Profile v1 §5: device_offline, device_permission_denied
// or device_command_timeout; anything else is tool_invoke_failed.
func (c *Connector) deviceError(err error, serial string) error {
	if err == nil {
		return nil
	}
	if pe := protocol.AsError(err); pe != nil {
		return pe
	}
	if errors.Is(err, errCommandTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return &protocol.Error{Code: connector.CodeDeviceCommandTimeout, Retryable: true,
			Message: fmt.Sprintf("device %s did not finish the command in time (is it asleep or busy?)", serial)}
	}
	if k, ok := adbc.KindOf(err); ok {
		switch k {
		case adbc.KindNotFound, adbc.KindOffline:
			return &protocol.Error{Code: connector.CodeDeviceOffline, Retryable: true,
				Message: fmt.Sprintf("device %s is not connected to the ADB server", serial)}
		case adbc.KindUnreachable:
			return &protocol.Error{Code: connector.CodeDeviceOffline, Retryable: true,
				Message: fmt.Sprintf("the ADB server at %s cannot be reached: run `adb start-server` on the connector's machine", c.adb.Addr())}
		case adbc.KindUnauthorized:
			return protocol.Errorf(connector.CodeDevicePermissionDenied,
				"device %s has not authorised this computer: accept the \"Allow USB debugging?\" prompt on the phone", serial)
		case adbc.KindNoPermissions:
			return protocol.Errorf(connector.CodeDevicePermissionDenied,
				"the connector's machine has no USB permission for device %s (udev rules)", serial)
		}
	}
	c.log.Warn("adb: device command failed", "err", err.Error())
	return protocol.Errorf(protocol.CodeToolInvokeFailed, "the command failed on device %s", serial)
}

// failed classifies err for a tool call; when the device turns out to be
// gone or refusing, the channel's Descriptor is corrected at once instead
// of at the next poll. A command whose output ended early (the stream
// closed mid-way, as when a device is unplugged) is checked the same way.
func (d *device) failed(ctx context.Context, err error) error {
	werr := d.c.deviceError(err, d.serial)
	d.recheck(ctx, werr)
	return werr
}

// recheck looks at the device list after a failure and reports the
// device's state to the channel when it is no longer usable.
func (d *device) recheck(ctx context.Context, werr error) {
	code := protocol.CodeOf(werr, "")
	if code == connector.CodeDeviceCommandTimeout {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.c.cmdTimeout)
	defer cancel()
	dev, err := d.c.adb.Device(cctx, d.serial)
	st, reason := stateOf(dev, err, d.c.adb.Addr())
	if st != connector.DeviceAvailable {
		d.reports.Add(1)
		if err := d.ch.SetDeviceState(cctx, st, reason); err != nil {
			d.c.log.Debug("adb: set device state", "err", err.Error())
		}
	}
}

// gone returns device_offline when the device has left since a command
// returned output that ended early, else nil.
func (d *device) gone(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.c.cmdTimeout)
	defer cancel()
	dev, err := d.c.adb.Device(cctx, d.serial)
	st, reason := stateOf(dev, err, d.c.adb.Addr())
	if st == connector.DeviceAvailable {
		return nil
	}
	d.reports.Add(1)
	_ = d.ch.SetDeviceState(cctx, st, reason)
	if st == connector.DevicePermissionDenied {
		return protocol.Errorf(connector.CodeDevicePermissionDenied, "device %s: %s", d.serial, reason)
	}
	return &protocol.Error{Code: connector.CodeDeviceOffline, Retryable: true,
		Message: fmt.Sprintf("device %s went away during the command", d.serial)}
}

// stateOf maps a device list entry (or the error of reading the list)
// to the SDK's device state and a reason a person can act on.
func stateOf(dev adbc.Device, err error, addr string) (connector.DeviceState, string) {
	if err != nil {
		k, _ := adbc.KindOf(err)
		switch k {
		case adbc.KindNotFound:
			return connector.DeviceOffline, "the device is not connected to the ADB server"
		case adbc.KindUnreachable:
			return connector.DeviceOffline, "the ADB server at " + addr + " cannot be reached"
		}
		return connector.DeviceOffline, "the device list cannot be read"
	}
	switch dev.State {
	case adbc.StateDevice:
		return connector.DeviceAvailable, ""
	case adbc.StateUnauthorized, adbc.StateAuthorizing:
		return connector.DevicePermissionDenied, "the device has not authorised this computer: accept the \"Allow USB debugging?\" prompt on the phone"
	case adbc.StateNoPermissions:
		return connector.DevicePermissionDenied, "no USB permission for the device on the connector's machine (udev rules)"
	}
	return connector.DeviceOffline, "the device is " + dev.State
}
