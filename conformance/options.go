package conformance

import (
	"io"
	"time"
)

// Default limits of a run.
const (
	// DefaultTimeout bounds the wait for one answer from the Connector.
	DefaultTimeout = 5 * time.Second
	// DefaultQRWait bounds the wait for a person to scan a QR code.
	DefaultQRWait = 2 * time.Minute
	// maxPacketShown bounds the packet quoted in a result.
	maxPacketShown = 2048
	// maxBody bounds an HTTP body read by the suite.
	maxBody = 1 << 20
	// maxFrame bounds one WebSocket frame read by the suite.
	maxFrame = 1 << 20
	// frameQueue bounds the frames buffered per connection.
	frameQueue = 256
)

// Options configures a run of [Check] or [Run]. The zero value checks a
// Connector that needs no API key and skips everything that needs a signed-in
// channel.
type Options struct {
	// APIKey is sent as Authorization: Bearer to /health, /ws and
	// /files/uploads. It is never printed.
	APIKey string
	// AuthFlow is the id of a Card auth flow used to sign a channel in.
	AuthFlow string
	// AuthInput are the form inputs of a form flow. Values of secret or
	// password fields are never printed.
	AuthInput map[string]string
	// AuthOpenURL confirms a QR flow by fetching (GET) and then POSTing the
	// qr_code_text URL, for Connectors whose QR is such a URL.
	AuthOpenURL bool
	// QRWait bounds the wait for a QR scan; default DefaultQRWait.
	QRWait time.Duration
	// Only and Skip select requirement IDs by path.Match patterns.
	Only, Skip []string
	// Strict makes SHOULD failures fail the run.
	Strict bool
	// Timeout bounds the wait for each answer; default DefaultTimeout.
	Timeout time.Duration
	// Out receives progress and the QR code of a QR flow; nil discards.
	Out io.Writer
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o Options) qrWait() time.Duration {
	if o.QRWait > 0 {
		return o.QRWait
	}
	return DefaultQRWait
}

func (o Options) out() io.Writer {
	if o.Out == nil {
		return io.Discard
	}
	return o.Out
}
