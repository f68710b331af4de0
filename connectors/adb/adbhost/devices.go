package adbhost

import (
	"fmt"
	"strings"
)

// Device states as the ADB server names them.
const (
	StateDevice        = "device"
	StateOffline       = "offline"
	StateUnauthorized  = "unauthorized"
	StateAuthorizing   = "authorizing"
	StateNoPermissions = "no permissions"
	StateRecovery      = "recovery"
	StateSideload      = "sideload"
	StateBootloader    = "bootloader"
	StateConnecting    = "connecting"
)

// MaxDevices bounds the devices ParseDevices returns.
const MaxDevices = 256

// Device is one line of host:devices-l.
type Device struct {
	Serial string
	// State is the connection state: StateDevice when usable.
	State string
	// Attributes of a usable device (may be empty).
	Product     string
	Model       string
	DeviceName  string
	TransportID string
	USB         string
}

// Usable reports whether the device accepts commands.
func (d Device) Usable() bool { return d.State == StateDevice }

// ParseDevices parses the payload of host:devices-l (and of host:devices):
// one device per line, the serial, whitespace, the state (which may
// itself contain spaces, as in "no permissions (…); see […]") and
// key:value attributes. Blank lines are skipped; a line without a state
// is an error. At most MaxDevices devices are returned.
func ParseDevices(b []byte) ([]Device, error) {
	var out []Device
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(out) == MaxDevices {
			return out, fmt.Errorf("adb: device list: more than %d devices", MaxDevices)
		}
		d, err := parseDeviceLine(line)
		if err != nil {
			return nil, fmt.Errorf("adb: device list line %d: %w", n+1, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func parseDeviceLine(line string) (Device, error) {
	serial, rest, ok := cutSpace(line)
	if !ok || serial == "" {
		return Device{}, fmt.Errorf("no state after the serial")
	}
	rest = strings.TrimLeft(rest, " \t")
	d := Device{Serial: serial}
	if strings.HasPrefix(rest, StateNoPermissions) {
		d.State = StateNoPermissions
		return d, nil // the rest is advice text, not attributes
	}
	st, attrs, _ := cutSpace(rest)
	if st == "" {
		return Device{}, fmt.Errorf("no state after the serial")
	}
	d.State = st
	for _, f := range strings.Fields(attrs) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		switch k {
		case "product":
			d.Product = v
		case "model":
			d.Model = v
		case "device":
			d.DeviceName = v
		case "transport_id":
			d.TransportID = v
		case "usb":
			d.USB = v
		}
	}
	return d, nil
}

// cutSpace splits s at its first space or tab.
func cutSpace(s string) (before, after string, found bool) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}
