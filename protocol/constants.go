package protocol

// Names of the protocol family (section 1 of the Common Protocol).
const (
	// CardSchema is the value of the Card's "schema" field.
	CardSchema = "xagent.connector/v1"
	// DescriptorSchema is the value of a current Connection Descriptor's "schema" field.
	DescriptorSchema = "xagent.connection/v2"
	// DescriptorSchemaV1 is the legacy Descriptor schema; it is accepted on read
	// and normalised to v2 by [NormalizeDescriptor]. It is never emitted.
	DescriptorSchemaV1 = "xagent.connection/v1"
	// PacketSchema is the value of every envelope's "schema" field.
	PacketSchema = "xagent.connector.packet/v1"
	// Subprotocol is the WebSocket subprotocol of the data plane.
	Subprotocol = "xagent.connector.packet.v1"
	// ProtocolVersion is the protocol version this package implements.
	ProtocolVersion = "3.0"
)

// Endpoint paths, relative to a Connector Base URL (sections 2, 4, 5 and 6).
const (
	PathCard        = "/connector-card.json"
	PathSkill       = "/skill.md"
	PathHealth      = "/health"
	PathWS          = "/ws"
	PathFileUploads = "/files/uploads"
	// PathFileRefsPrefix is followed by a file_ref: GET /files/refs/{file_ref}.
	PathFileRefsPrefix = "/files/refs/"
	// HeaderChannelID carries the channel of an upload.
	HeaderChannelID = "X-XAgent-Connector-Channel-ID"
)

// Profile identifies a Profile specification.
type Profile = string

// Standard Profiles.
const (
	ProfileIMv1     Profile = "xagent.im.v1"
	ProfileIMv2     Profile = "xagent.im.v2"
	ProfileDeviceV1 Profile = "xagent.device.v1"
)

// TargetType is the kind of external system a Connector reaches.
type TargetType = string

// Target types of protocol 3.0.
const (
	TargetIM       TargetType = "im"
	TargetEmail    TargetType = "email"
	TargetCalendar TargetType = "calendar"
	TargetTicket   TargetType = "ticket"
	TargetDevice   TargetType = "device"
)

// TargetTypes lists every target type of protocol 3.0.
func TargetTypes() []TargetType {
	return []TargetType{TargetIM, TargetEmail, TargetCalendar, TargetTicket, TargetDevice}
}

// UserChannelMode values of Card supports.user_channel_mode.
const (
	UserChannelSingle   = "single"
	UserChannelMultiple = "multiple"
)

// AuthFlowType values of Card auth_flows[].type.
const (
	AuthFlowQRLogin = "qr_login"
	AuthFlowForm    = "form"
)

// InputType values of Card auth_flows[].fields[].input_type.
const (
	InputText     = "text"
	InputPassword = "password"
)

// TrustLevel values of Card security.trust_level.
const (
	TrustUnknown    = "unknown"
	TrustBuiltin    = "builtin"
	TrustVerified   = "verified"
	TrustThirdParty = "third_party"
	TrustLocal      = "local"
)

// ConnectionStatus is a Descriptor connection.status (section 9).
type ConnectionStatus = string

// Connection statuses.
const (
	StatusCreated        ConnectionStatus = "created"
	StatusAuthenticating ConnectionStatus = "authenticating"
	StatusConnected      ConnectionStatus = "connected"
	StatusDegraded       ConnectionStatus = "degraded"
	StatusOffline        ConnectionStatus = "offline"
	StatusExpired        ConnectionStatus = "expired"
	StatusRevoked        ConnectionStatus = "revoked"
	StatusError          ConnectionStatus = "error"
)

// ConnectionStatuses lists every connection status.
func ConnectionStatuses() []ConnectionStatus {
	return []ConnectionStatus{StatusCreated, StatusAuthenticating, StatusConnected, StatusDegraded,
		StatusOffline, StatusExpired, StatusRevoked, StatusError}
}

// ToolStatus is a Descriptor tools[].status.
type ToolStatus = string

// Tool statuses.
const (
	ToolAvailable      ToolStatus = "available"
	ToolUnavailable    ToolStatus = "unavailable"
	ToolDeniedByTarget ToolStatus = "denied_by_target"
	ToolRequiresReauth ToolStatus = "requires_reauth"
	ToolNotSupported   ToolStatus = "not_supported"
)

// PermissionState is a Descriptor tools[].target_permission_state.
type PermissionState = string

// Target permission states.
const (
	PermissionUnknown        PermissionState = "unknown"
	PermissionGranted        PermissionState = "granted"
	PermissionDenied         PermissionState = "denied"
	PermissionRequiresReauth PermissionState = "requires_reauth"
)

// AuthStatus is the status of an auth.start.ack or auth.status.ack.
type AuthStatus = string

// Authentication statuses (sections 8.8 and 8.10).
const (
	AuthPending           AuthStatus = "pending"
	AuthScanned           AuthStatus = "scanned"
	AuthAuthenticated     AuthStatus = "authenticated"
	AuthUnauthenticated   AuthStatus = "unauthenticated"
	AuthExpired           AuthStatus = "expired"
	AuthQRRefreshRequired AuthStatus = "qr_refresh_required"
	AuthFailed            AuthStatus = "failed"
)

// CancelStatus is the status of an auth.cancel.ack (section 8.12).
type CancelStatus = string

// Cancel statuses.
const (
	CancelCanceled CancelStatus = "canceled"
	CancelIgnored  CancelStatus = "ignored"
	CancelNotFound CancelStatus = "not_found"
)

// ActivityStatus is the status of a chat.activity (IM v2 section 8).
type ActivityStatus = string

// Activity statuses.
const (
	ActivityThinking ActivityStatus = "thinking"
	ActivityTool     ActivityStatus = "tool"
	ActivityIdle     ActivityStatus = "idle"
)

// MaxActivityToolNameBytes bounds chat.activity tool_name.
const MaxActivityToolNameBytes = 256

// FileType is the type of a chat.message file (IM v2 section 5.2).
type FileType = string

// File types.
const (
	FileImage FileType = "image"
	FileVideo FileType = "video"
	FileAudio FileType = "audio"
	FileFile  FileType = "file"
)

// AckStatus is the status of a chat.message.ack (IM v2 section 7).
type AckStatus = string

// Ack statuses.
const (
	AckAccepted  AckStatus = "accepted"
	AckDuplicate AckStatus = "duplicate"
	AckRejected  AckStatus = "rejected"
)

// MaxToolIDLength bounds tools[].tool_id.
const MaxToolIDLength = 256

// ChannelIDArgument is the reserved model argument every tool input schema carries.
const ChannelIDArgument = "connector_channel_id"

// ForbiddenIMv2PayloadFields may not appear in any IM v2 payload (IM v2 section 3).
func ForbiddenIMv2PayloadFields() []string {
	return []string{"session_id", "user_connector_id", "user_id", "connector_id", "role"}
}

// IMv1EventMessageReceived is the event_kind of an ordinary inbound IM v1 message.
const IMv1EventMessageReceived = "im.message.received"
