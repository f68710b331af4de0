package protocol

import "encoding/json"

// Packet types of the common protocol (section 8), IM v2 and IM v1.
const (
	TypeHello            = "connector.hello"
	TypeHelloAck         = "connector.hello.ack"
	TypeChannelOpen      = "channel.open"
	TypeChannelOpenAck   = "channel.open.ack"
	TypeChannelClose     = "channel.close"
	TypeChannelCloseAck  = "channel.close.ack"
	TypeAuthStart        = "auth.start"
	TypeAuthStartAck     = "auth.start.ack"
	TypeAuthStatus       = "auth.status"
	TypeAuthStatusAck    = "auth.status.ack"
	TypeAuthCancel       = "auth.cancel"
	TypeAuthCancelAck    = "auth.cancel.ack"
	TypeAuthLogout       = "auth.logout"
	TypeAuthLogoutAck    = "auth.logout.ack"
	TypeDescriptorGet    = "connection.descriptor.get"
	TypeDescriptorGetAck = "connection.descriptor.get.ack"
	TypeDescriptorPush   = "connection.descriptor.push"
	TypeToolInvoke       = "tool.invoke"
	TypeToolInvokeAck    = "tool.invoke.ack"
	TypeToolProgressPush = "tool.progress.push"
	TypeMessagePush      = "message.push"
	TypePing             = "ping"
	TypePong             = "pong"
	TypeError            = "error"
	TypeChatMessage      = "chat.message"
	TypeChatMessageDelta = "chat.message.delta"
	TypeChatMessageAck   = "chat.message.ack"
	TypeChatActivity     = "chat.activity"
)

// HelloPayload is the payload of connector.hello (section 8.1).
type HelloPayload struct {
	ConnectorCardID   string     `json:"connector_card_id"`
	ConnectorID       string     `json:"connector_id,omitempty"`
	ProtocolVersion   string     `json:"protocol_version,omitempty"`
	SupportedProfiles []Profile  `json:"supported_profiles,omitempty"`
	Extensions        Extensions `json:"-"`
}

// HelloAckPayload is the payload of connector.hello.ack (section 8.2).
type HelloAckPayload struct {
	ConnectorCardID string     `json:"connector_card_id"`
	ConnectorID     string     `json:"connector_id"`
	ProtocolVersion string     `json:"protocol_version"`
	Extensions      Extensions `json:"-"`
}

// EmptyPayload is the payload of packets whose payload "can currently be
// empty": channel.open, channel.close, auth.logout, connection.descriptor.get,
// ping and pong. Members sent anyway are kept.
type EmptyPayload struct {
	Extensions Extensions `json:"-"`
}

// ChannelOpenAckPayload is the payload of channel.open.ack (section 8.4).
type ChannelOpenAckPayload struct {
	ConnectorChannelID   string      `json:"connector_channel_id"`
	ConnectionDescriptor *Descriptor `json:"connection_descriptor"`
	Extensions           Extensions  `json:"-"`
}

// StatusPayload is the payload of channel.close.ack: {"status":"ok"}.
type StatusPayload struct {
	Status     string     `json:"status"`
	Extensions Extensions `json:"-"`
}

// AuthStartPayload is the payload of auth.start (section 8.7). Input holds
// form fields for a form flow and is omitted for qr_login.
type AuthStartPayload struct {
	FlowID     string            `json:"flow_id"`
	Input      map[string]string `json:"input,omitempty"`
	Extensions Extensions        `json:"-"`
}

// AuthStatePayload is the payload of auth.start.ack and auth.status.ack
// (sections 8.8 and 8.10).
type AuthStatePayload struct {
	ConnectorChannelID   string      `json:"connector_channel_id,omitempty"`
	FlowID               string      `json:"flow_id,omitempty"`
	AuthSessionID        string      `json:"auth_session_id,omitempty"`
	Status               AuthStatus  `json:"status"`
	QRCodeText           string      `json:"qr_code_text,omitempty"`
	QRCodeImage          string      `json:"qr_code_image,omitempty"`
	ExpiresAt            int64       `json:"expires_at,omitempty"`
	PollIntervalMillis   int64       `json:"poll_interval_millis,omitempty"`
	Message              string      `json:"message,omitempty"`
	ConnectionDescriptor *Descriptor `json:"connection_descriptor,omitempty"`
	Extensions           Extensions  `json:"-"`
}

// AuthStatusPayload is the payload of auth.status (section 8.9).
type AuthStatusPayload struct {
	FlowID        string     `json:"flow_id,omitempty"`
	AuthSessionID string     `json:"auth_session_id"`
	Refresh       bool       `json:"refresh,omitempty"`
	Extensions    Extensions `json:"-"`
}

// AuthCancelPayload is the payload of auth.cancel (section 8.11).
type AuthCancelPayload struct {
	AuthSessionID string     `json:"auth_session_id"`
	Extensions    Extensions `json:"-"`
}

// AuthCancelAckPayload is the payload of auth.cancel.ack (section 8.12).
type AuthCancelAckPayload struct {
	ConnectorChannelID   string       `json:"connector_channel_id,omitempty"`
	AuthSessionID        string       `json:"auth_session_id,omitempty"`
	Status               CancelStatus `json:"status"`
	AuthStatus           AuthStatus   `json:"auth_status,omitempty"`
	Message              string       `json:"message,omitempty"`
	ConnectionDescriptor *Descriptor  `json:"connection_descriptor,omitempty"`
	Extensions           Extensions   `json:"-"`
}

// AuthLogoutAckPayload is the payload of auth.logout.ack (section 8.14).
type AuthLogoutAckPayload struct {
	Status               string      `json:"status"`
	ConnectionDescriptor *Descriptor `json:"connection_descriptor,omitempty"`
	Extensions           Extensions  `json:"-"`
}

// DescriptorPayload is the payload of connection.descriptor.get.ack and
// connection.descriptor.push (sections 8.16 and 8.17).
type DescriptorPayload struct {
	ConnectionDescriptor *Descriptor `json:"connection_descriptor"`
	Extensions           Extensions  `json:"-"`
}

// ToolInvokePayload is the payload of tool.invoke (section 8.18). Arguments
// are the model's arguments, unchanged.
type ToolInvokePayload struct {
	ToolID     string          `json:"tool_id"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Context    *ToolContext    `json:"context,omitempty"`
	Extensions Extensions      `json:"-"`
}

// ToolContext is correlation data only: never identity, route or authorisation.
type ToolContext struct {
	SessionID  string     `json:"session_id,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Extensions Extensions `json:"-"`
}

// ToolInvokeAckPayload is the successful payload of tool.invoke.ack (section
// 8.19). A failure uses the envelope error instead.
type ToolInvokeAckPayload struct {
	ToolID     string          `json:"tool_id"`
	Result     json.RawMessage `json:"result,omitempty"`
	Extensions Extensions      `json:"-"`
}

// ToolProgressPayload is the payload of tool.progress.push (section 8.20).
type ToolProgressPayload struct {
	ToolID string `json:"tool_id"`
	// ToolCallID, an xconn addition to the spec's recommended payload,
	// names the call (its context.tool_call_id) so that a host can tell two
	// concurrent calls of one tool apart.
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Status     string     `json:"status,omitempty"`
	Message    string     `json:"message,omitempty"`
	Progress   *float64   `json:"progress,omitempty"`
	Extensions Extensions `json:"-"`
}

// ChatMessagePayload is the payload of chat.message (IM v2 section 5): one
// complete business message. Connector to xAgent it is user input; xAgent to
// Connector it is a final assistant message.
type ChatMessagePayload struct {
	MessageID  string     `json:"message_id"`
	Text       string     `json:"text,omitempty"`
	Files      []ChatFile `json:"files,omitempty"`
	CreatedAt  int64      `json:"created_at,omitempty"`
	Extensions Extensions `json:"-"`
}

// ChatFile is one file of a chat.message or message.push (IM v2 section 5.2).
type ChatFile struct {
	Type        FileType `json:"type,omitempty"`
	FileRef     string   `json:"file_ref"`
	Filename    string   `json:"filename,omitempty"`
	MimeType    string   `json:"mime_type,omitempty"`
	ByteSize    int64    `json:"byte_size,omitempty"`
	ExpiresAt   int64    `json:"expires_at,omitempty"`
	DownloadURL string   `json:"download_url,omitempty"`
	// URL is the other spelling IM v1 allows on a message.push file (IM v1
	// section 9: xAgent's file reader needs download_url or url). IM v2
	// defines only download_url; read a file's address with
	// [ChatFile.SourceURL].
	URL        string     `json:"url,omitempty"`
	Extensions Extensions `json:"-"`
}

// SourceURL returns where the file is downloaded from: download_url, else
// the IM v1 url, else "" (a file that cannot be read).
func (f *ChatFile) SourceURL() string {
	if f.DownloadURL != "" {
		return f.DownloadURL
	}
	return f.URL
}

// ChatDeltaPayload is the payload of chat.message.delta (IM v2 section 6).
type ChatDeltaPayload struct {
	MessageID  string     `json:"message_id"`
	Sequence   int64      `json:"sequence"`
	Text       string     `json:"text"`
	Extensions Extensions `json:"-"`
}

// ChatAckPayload is the payload of chat.message.ack (IM v2 section 7).
// Retryable is a pointer because a rejection must carry it explicitly.
type ChatAckPayload struct {
	MessageID  string     `json:"message_id"`
	Status     AckStatus  `json:"status"`
	Code       string     `json:"code,omitempty"`
	Retryable  *bool      `json:"retryable,omitempty"`
	Message    string     `json:"message,omitempty"`
	Extensions Extensions `json:"-"`
}

// ChatActivityPayload is the payload of chat.activity (IM v2 section 8).
type ChatActivityPayload struct {
	Status     ActivityStatus `json:"status"`
	ToolName   string         `json:"tool_name,omitempty"`
	Extensions Extensions     `json:"-"`
}

// MessagePushPayload is the payload of the legacy IM v1 message.push (section
// 8.21 and IM v1 section 5). Reply and Skill have no fixed shape.
type MessagePushPayload struct {
	Provider          string          `json:"provider"`
	Profile           Profile         `json:"profile"`
	EventKind         string          `json:"event_kind"`
	MessageID         string          `json:"message_id"`
	SenderID          string          `json:"sender_id"`
	SenderName        string          `json:"sender_name,omitempty"`
	DisplayName       string          `json:"display_name,omitempty"`
	ChatID            string          `json:"chat_id,omitempty"`
	ChatType          string          `json:"chat_type,omitempty"`
	MessageType       string          `json:"message_type"`
	RawText           string          `json:"raw_text"`
	Text              string          `json:"text,omitempty"`
	Content           string          `json:"content,omitempty"`
	Message           string          `json:"message,omitempty"`
	ActivationMessage string          `json:"activation_message,omitempty"`
	TargetSessionRef  string          `json:"target_session_ref,omitempty"`
	SessionRef        string          `json:"session_ref,omitempty"`
	TargetSessionID   string          `json:"target_session_id,omitempty"`
	Reply             json.RawMessage `json:"reply,omitempty"`
	Skill             json.RawMessage `json:"skill,omitempty"`
	Files             []ChatFile      `json:"files,omitempty"`
	Extensions        Extensions      `json:"-"`
}

// HealthResponse is the body of a successful GET /health (section 4.3).
type HealthResponse struct {
	Status               string     `json:"status"`
	ConnectorCardID      string     `json:"connector_card_id,omitempty"`
	ConnectorCardVersion string     `json:"connector_card_version,omitempty"`
	ProtocolVersion      string     `json:"protocol_version,omitempty"`
	Build                *Build     `json:"build,omitempty"`
	Extensions           Extensions `json:"-"`
}

// UploadResponse is the body of a successful POST /files/uploads (section 5.1).
type UploadResponse struct {
	FileRef    string     `json:"file_ref"`
	FileType   FileType   `json:"file_type"`
	Filename   string     `json:"filename"`
	ByteSize   int64      `json:"byte_size"`
	ExpiresAt  int64      `json:"expires_at"`
	Extensions Extensions `json:"-"`
}
