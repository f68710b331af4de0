package conformance

import (
	"context"
	"encoding/json"
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
//
// A run that signed a channel in (AuthFlow) signs it out again with
// auth.logout when it ends, whatever the verdicts and also when the run
// fails or its context is canceled; the sign-out as a whole is bounded by
// Timeout and its outcome is written to Out.
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
	// Inbound, when set, asks the caller to make the target system send one
	// new inbound message (text is enough) on the signed-in channel
	// channelID, as a person writing to the test account would; it returns
	// once the message is sent, or an error. The suite then waits for the
	// Connector's chat.message on that channel. It lets the inbound checks
	// (imv2.inbound-delivered, imv2.inbound-message-id) and the redelivery
	// checks (imv2.redelivery, imv2.inbound-acked-not-resent) run inside go
	// test: with the Connector's fake target, Inbound is one call. Without
	// it those checks run only on a message the Connector publishes on its
	// own during the run, or are skipped with the reason.
	//
	// The suite calls Inbound from the goroutine running the checks, at
	// most three times per run, only after a channel was signed in: twice
	// for the inbound checks, and once more when the Connector rejects the
	// suite's first final (a target whose bot cannot write first, such as
	// Feishu, needs the user's message to open the conversation, as in real
	// use; the final is then sent again). ctx ends after Timeout. An error
	// skips the checks that needed the message.
	Inbound func(ctx context.Context, channelID string) error
	// Tool is the tool_id of a Card tool the suite may invoke, once, on the
	// signed-in channel (tool.invoke), with ToolArgs. A Card does not say
	// which tools have side effects, so the suite never invents arguments
	// and invokes no tool on a signed-in channel unless told which one:
	// without Tool, tool.invoke is skipped. Tool also picks the tool that
	// tool.unauthenticated invokes on a channel that is not signed in
	// (default: the Card's first tool, with connector_channel_id as its only
	// argument). With ToolArgs given too, tool.idempotency repeats the call
	// once with the same tool_call_id and arguments: name a side-effecting
	// tool, whose repeat must not run again.
	Tool string
	// ToolArgs are the arguments of Tool: a JSON object, or empty for none.
	// The suite sets its connector_channel_id member to the channel it
	// invokes on. ToolArgs without Tool, or ToolArgs that are not a JSON
	// object, make [Check] fail before the run starts.
	ToolArgs json.RawMessage
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
