package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (possibly wrapped) when a record does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned (possibly wrapped) when a write would break a
// uniqueness rule, such as a second catalog record for one connector_card_id.
var ErrConflict = errors.New("store: conflict")

// ErrLimit is returned (possibly wrapped) when a write would exceed a
// configured bound (for example the maximum number of channels).
var ErrLimit = errors.New("store: limit reached")

// Instance is a Connector runtime instance: a connector_id issued in a hello,
// with its lease state (section 8.2, architecture section 4).
type Instance struct {
	CardID      string
	ConnectorID string
	CreatedAt   time.Time
	// GraceUntil is when the lease expires while no hello-completed socket is
	// connected; zero while one is connected.
	GraceUntil time.Time
}

// Channel is a Connector-side user-level channel and its target binding.
type Channel struct {
	CardID      string
	ChannelID   string
	ConnectorID string // owning runtime instance
	Status      string // a protocol.ConnectionStatus
	FlowID      string // auth flow that bound it, if any
	// Binding is the connector's opaque target binding (tokens included). It
	// is a secret: encrypted at rest, never logged.
	Binding     []byte
	DisplayName string // display-level, redacted
	AccountHint string // redacted hint
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// AuthSession is an unfinished (or just finished) sign-in session.
type AuthSession struct {
	ID        string
	CardID    string
	ChannelID string
	FlowID    string
	Status    string // a protocol.AuthStatus
	ExpiresAt time.Time
	// State is flow-private data (QR token, pending form input). Secret:
	// encrypted at rest.
	State     []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ToolCall is an idempotency record of a side-effecting tool call, keyed by
// (CardID, ChannelID, ToolCallID).
type ToolCall struct {
	CardID     string
	ChannelID  string
	ToolCallID string
	ToolID     string
	ArgsHash   string // hash of the canonical arguments
	Result     []byte // JSON result of a success
	ErrCode    string // wire code of a failure
	ErrMessage string
	CreatedAt  time.Time
}

// File is a file held by the transfer plane.
type File struct {
	Ref       string
	CardID    string
	ChannelID string
	Direction string // "upload" (xAgent -> Connector) or "download" (Connector -> xAgent)
	Path      string // local path of the bytes
	Filename  string
	MimeType  string
	FileType  string // a protocol.FileType
	Size      int64
	ExpiresAt time.Time
	CreatedAt time.Time
}

// CatalogEntry is the host's record of one admitted Connector (BaseConnector,
// architecture section 3.1). One per CardID.
type CatalogEntry struct {
	CardID      string
	BaseURL     string
	APIKey      string // secret: encrypted at rest
	ConnectorID string
	Card        []byte // Card snapshot (JSON)
	Skill       []byte // Skill snapshot (Markdown), nil when none
	Health      string // last health state
	LastError   string // summary of the most recent error, secret-free
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// UserChannel is the host's ownership record user_id + connector_card_id +
// connector_channel_id (a UserConnector). ID is the stable primary key that
// survives a reissued ChannelID.
type UserChannel struct {
	ID            string
	UserID        string
	CardID        string
	ChannelID     string
	SessionID     string // dedicated session bound to this channel, if any
	Authenticated bool
	Descriptor    []byte // latest Descriptor JSON
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ConnectorStore is the durable state of the Connector Server side. *DB
// implements it; implementations are safe for concurrent use.
type ConnectorStore interface {
	PutInstance(ctx context.Context, in Instance) error
	GetInstance(ctx context.Context, cardID, connectorID string) (Instance, error)
	ListInstances(ctx context.Context, cardID string) ([]Instance, error)
	DeleteInstance(ctx context.Context, cardID, connectorID string) error

	// PutChannel inserts or updates a channel; a new channel beyond the
	// configured maximum fails with ErrLimit.
	PutChannel(ctx context.Context, ch Channel) error
	GetChannel(ctx context.Context, cardID, channelID string) (Channel, error)
	// ListChannels lists the channels of one instance, or all of the card
	// when connectorID is "".
	ListChannels(ctx context.Context, cardID, connectorID string) ([]Channel, error)
	// DeleteChannel removes a channel with its auth sessions, tool-call
	// records, file records and key/value state.
	DeleteChannel(ctx context.Context, cardID, channelID string) error

	// PutChannelState sets key to value in the durable key/value state of
	// an existing channel (ErrNotFound otherwise): what a connector must
	// remember across restarts, such as reply context tokens, poll offsets
	// or the last chat. Values are secrets, encrypted at rest; nil is
	// stored as empty. A key must be non-empty UTF-8 without NUL bytes
	// (else ErrChannelStateKey). A Put that would exceed
	// MaxChannelStateKeys, MaxChannelStateKeyBytes,
	// MaxChannelStateValueBytes or MaxChannelStateBytes fails with a
	// *ChannelStateLimitError (errors.Is ErrChannelStateFull and ErrLimit)
	// and changes nothing; overwriting a key is measured with its new
	// size. The bounds hold under concurrent Puts.
	PutChannelState(ctx context.Context, cardID, channelID, key string, value []byte) error
	// GetChannelState returns the value of key (never nil), or ErrNotFound
	// when it is not set.
	GetChannelState(ctx context.Context, cardID, channelID, key string) ([]byte, error)
	// DeleteChannelState removes key (no error when absent).
	DeleteChannelState(ctx context.Context, cardID, channelID, key string) error
	// ListChannelState returns the channel's whole state, key to value: an
	// empty map when none is set, at most MaxChannelStateKeys entries.
	ListChannelState(ctx context.Context, cardID, channelID string) (map[string][]byte, error)
	// ClearChannelState removes every key of the channel's state.
	ClearChannelState(ctx context.Context, cardID, channelID string) error

	PutAuthSession(ctx context.Context, s AuthSession) error
	GetAuthSession(ctx context.Context, cardID, id string) (AuthSession, error)
	DeleteAuthSession(ctx context.Context, cardID, id string) error
	// DeleteExpiredAuthSessions removes sessions with ExpiresAt before t.
	DeleteExpiredAuthSessions(ctx context.Context, cardID string, t time.Time) (int, error)

	// GetToolCall returns the record for a tool call id, or ErrNotFound.
	GetToolCall(ctx context.Context, cardID, channelID, toolCallID string) (ToolCall, error)
	// PutToolCall stores a record; storing a second record for the same key
	// fails with ErrConflict.
	PutToolCall(ctx context.Context, tc ToolCall) error
	// PruneToolCalls drops records older than t and keeps at most max per card.
	PruneToolCalls(ctx context.Context, cardID string, t time.Time, max int) (int, error)

	PutFile(ctx context.Context, f File) error
	GetFile(ctx context.Context, cardID, ref string) (File, error)
	DeleteFile(ctx context.Context, cardID, ref string) error
	// ExpiredFiles lists up to limit files with ExpiresAt before t.
	ExpiredFiles(ctx context.Context, cardID string, t time.Time, limit int) ([]File, error)
}

// HostStore is the durable state of the xAgent (host) side. *DB implements
// it; implementations are safe for concurrent use.
type HostStore interface {
	// InsertCatalog adds an entry; an existing entry for the CardID fails
	// with ErrConflict (one Connector per connector_card_id).
	InsertCatalog(ctx context.Context, e CatalogEntry) error
	// UpdateCatalog rewrites an existing entry, keeping CreatedAt.
	UpdateCatalog(ctx context.Context, e CatalogEntry) error
	GetCatalog(ctx context.Context, cardID string) (CatalogEntry, error)
	ListCatalog(ctx context.Context) ([]CatalogEntry, error)
	DeleteCatalog(ctx context.Context, cardID string) error

	// PutUserChannel inserts or updates by ID; (UserID, CardID, ChannelID)
	// is unique.
	PutUserChannel(ctx context.Context, uc UserChannel) error
	GetUserChannel(ctx context.Context, id string) (UserChannel, error)
	FindUserChannel(ctx context.Context, userID, cardID, channelID string) (UserChannel, error)
	// ListUserChannels lists by user and card; userID "" lists every user's
	// channels of the card. Ordered by CreatedAt, then ID.
	ListUserChannels(ctx context.Context, userID, cardID string) ([]UserChannel, error)
	// DeleteUserChannel removes a record and the conversation memory
	// keyed by its ID.
	DeleteUserChannel(ctx context.Context, id string) error

	// AppendMemory appends entries to a conversation's memory (an agent's
	// messages, opaque bytes, encrypted at rest) and drops the oldest ones
	// beyond maxEntries entries or maxBytes bytes, both clamped to
	// MaxMemoryEntries and MaxMemoryBytes (zero or less takes the bound),
	// in one transaction. An entry larger than MaxMemoryEntryBytes or
	// maxBytes fails with ErrMemoryEntryTooLarge (ErrLimit) and nothing is
	// appended. A conversation key is non-empty UTF-8 without NUL bytes, at
	// most MaxMemoryConversationBytes long; agents use the user channel ID.
	AppendMemory(ctx context.Context, conversation string, entries [][]byte, maxEntries int, maxBytes int64) error
	// ListMemory returns a conversation's entries, oldest first.
	ListMemory(ctx context.Context, conversation string) ([]MemoryEntry, error)
	// ClearMemory forgets a conversation.
	ClearMemory(ctx context.Context, conversation string) error
}

// Leaser grants a named lease to one holder at a time across processes that
// share a database (PostgreSQL failover: one process works, the other waits).
type Leaser interface {
	// AcquireLease takes or renews the lease name for holder until now+ttl.
	// It reports false when another holder has an unexpired lease.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}
