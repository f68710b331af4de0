package store

import "time"

// Default bounds of [Options].
const (
	DefaultMaxChannels     = 1_000_000
	DefaultMaxInstances    = 1000
	DefaultMaxAuthSessions = 10_000
	DefaultMaxToolCalls    = 100_000
	DefaultToolCallAge     = 24 * time.Hour
	DefaultMaxFiles        = 100_000
	DefaultMaxCatalog      = 1000
	DefaultMaxUserChannels = 1_000_000
	DefaultMaxLeases       = 1000
	DefaultMaxOpenConns    = 10
)

// Options configures [Open]. Zero fields take the documented defaults.
type Options struct {
	// DataDir holds the key file secret.key (created with mode 0600 when
	// absent). Needed unless Key is set.
	DataDir string
	// Key is a 32-byte AES-256 key (from a flag or the environment); it
	// overrides the key file.
	Key []byte
	// MaxChannels bounds the channels per card (default 1,000,000);
	// PutChannel of a new channel beyond it fails with ErrLimit.
	MaxChannels int
	// MaxInstances bounds the connector instances per card (default 1,000);
	// beyond it PutInstance fails with ErrLimit.
	MaxInstances int
	// MaxAuthSessions bounds the sign-in sessions per card (default 10,000);
	// a new session first removes expired ones, then fails with ErrLimit.
	MaxAuthSessions int
	// MaxToolCalls bounds the tool-call records per card (default 100,000);
	// PutToolCall drops the oldest records to stay within it.
	MaxToolCalls int
	// ToolCallAge is the retention that PutToolCall enforces on the records
	// of its card (default 24 h); PruneToolCalls applies any other.
	ToolCallAge time.Duration
	// MaxFiles bounds the file records per card (default 100,000); beyond it
	// PutFile fails with ErrLimit (the bytes on disk belong to the caller).
	MaxFiles int
	// MaxCatalog bounds the host catalog (default 1,000 connectors).
	MaxCatalog int
	// MaxUserChannels bounds the host's user→channel index (default
	// 1,000,000 records).
	MaxUserChannels int
	// MaxLeases bounds the named leases (default 1,000).
	MaxLeases int
	// MaxOpenConns bounds the PostgreSQL pool (default 10). SQLite uses
	// one writer connection and up to this many readers.
	MaxOpenConns int
	// GroupCommitMax bounds the write operations of the delivery engine
	// (outbox enqueue, finish, retry; inbox put) that SQLite commits in one
	// transaction, and the operations waiting for it (default 256).
	GroupCommitMax int
	// GroupCommitDelay is how long the committer waits for more
	// operations before a commit when the previous commit held
	// several (default DefaultGroupCommitDelay on SQLite, 200 µs on
	// PostgreSQL; negative: never wait). A lone caller never waits.
	GroupCommitDelay time.Duration
	// Now supplies the time for timestamps and leases (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxChannels, DefaultMaxChannels)
	def(&o.MaxInstances, DefaultMaxInstances)
	def(&o.MaxAuthSessions, DefaultMaxAuthSessions)
	def(&o.MaxToolCalls, DefaultMaxToolCalls)
	def(&o.MaxFiles, DefaultMaxFiles)
	def(&o.MaxCatalog, DefaultMaxCatalog)
	def(&o.MaxUserChannels, DefaultMaxUserChannels)
	def(&o.MaxLeases, DefaultMaxLeases)
	def(&o.MaxOpenConns, DefaultMaxOpenConns)
	def(&o.GroupCommitMax, DefaultGroupCommitMax)
	if o.ToolCallAge <= 0 {
		o.ToolCallAge = DefaultToolCallAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
