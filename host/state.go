package host

import (
	"time"

	"github.com/xconn/xconn/protocol"
)

// HealthState is the health of an admitted connector as seen by the
// periodic GET /health probe (section 4.3).
type HealthState string

// Health states.
const (
	// HealthUnknown: not probed yet.
	HealthUnknown HealthState = "unknown"
	// HealthOK: the last probe succeeded and matched the Card.
	HealthOK HealthState = "ok"
	// HealthDegraded: one or two consecutive probe failures.
	HealthDegraded HealthState = "degraded"
	// HealthOffline: three or more consecutive probe failures.
	HealthOffline HealthState = "offline"
	// HealthAuthFailed: /health answered 401 or 403 (the API key is wrong).
	HealthAuthFailed HealthState = "auth_failed"
	// HealthIncompatible: /health (or a refetched Card) reports another
	// connector_card_id or a protocol_version that is not admitted; the
	// connector is kept offline until a later probe matches again.
	HealthIncompatible HealthState = "incompatible"
)

// LinkState is the state of the data-plane client of one connector.
type LinkState string

// Link states.
const (
	// LinkConnecting: dialing /ws or waiting for connector.hello.ack.
	LinkConnecting LinkState = "connecting"
	// LinkOnline: hello completed; requests can be sent.
	LinkOnline LinkState = "online"
	// LinkBackoff: the last attempt failed; waiting before the next one.
	LinkBackoff LinkState = "backoff"
	// LinkStopped: MaxReconnectFailures consecutive failures; nothing is
	// tried until [Host.Recover].
	LinkStopped LinkState = "stopped"
	// LinkClosed: the connector was removed or the host closed.
	LinkClosed LinkState = "closed"
)

// Connector is a snapshot of one admitted connector. It is a value: later
// changes are not reflected; ask [Host.Connector] again.
type Connector struct {
	CardID  string
	BaseURL string
	// ConnectorID is the runtime instance id of the last connector.hello.ack.
	ConnectorID string
	Card        *protocol.Card
	// Skill is the primary Skill (Markdown), nil when the connector has none.
	Skill  []byte
	Health HealthState
	Link   LinkState
	// Profiles is the hello-level negotiation: the host's supported Profiles
	// intersected with the Card's.
	Profiles []protocol.Profile
	// LastError is the latest health or link failure, secret-free.
	LastError string
	// FailedPushes counts the IM v1 message.push packets of this connector
	// that did not reach the Agent since the host started (malformed, on a
	// channel that is not open or not negotiated, a file that could not be
	// downloaded, the Agent refused): message.push has no ack, so each is
	// also logged with its message_id and reported as an EventPushFailed.
	FailedPushes int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// EventKind names an [Event].
type EventKind string

// Event kinds.
const (
	EventHealth            EventKind = "health"             // Health changed
	EventLink              EventKind = "link"               // Link changed
	EventCardRefresh       EventKind = "card_refresh"       // Card and Skill refetched
	EventChannel           EventKind = "channel"            // a user channel was reopened, re-identified or changed status
	EventToolProgress      EventKind = "tool_progress"      // a tool.progress.push arrived
	EventDelivery          EventKind = "delivery"           // an assistant final reached a terminal outcome
	EventDescriptorIgnored EventKind = "descriptor_ignored" // a pushed Descriptor failed validation and was ignored
	EventPushFailed        EventKind = "push_failed"        // an IM v1 message.push did not reach the Agent; Detail: message_id, code, reason
)

// Event is one observable state change, passed to [Options.OnEvent].
type Event struct {
	Kind   EventKind
	CardID string
	// UserChannelID and ChannelID identify the channel, when the event has one.
	UserChannelID string
	ChannelID     string
	Health        HealthState
	Link          LinkState
	// Detail is a short secret-free description.
	Detail   string
	Progress *protocol.ToolProgressPayload
	At       time.Time
}
