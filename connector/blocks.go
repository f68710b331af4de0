package connector

// Building blocks: small pieces the SDK uses itself and exports so that a
// connector or an embedding host outside this module can use the same
// implementation (a package outside github.com/xconn/xconn cannot import its
// internal packages). Each is a thin wrapper; the SDK's behaviour does not
// depend on them being called.

import (
	"log/slog"
	"sync"

	"github.com/xconn/xconn/internal/buildinfo"
	"github.com/xconn/xconn/internal/redact"
	"github.com/xconn/xconn/internal/signurl"
	"github.com/xconn/xconn/protocol"
)

// BuildInfo returns the build metadata of the running binary in the shape of
// the Card's and /health's "build" block: version, git tag, git revision and
// build time. Use it to fill [protocol.Card.Build]; /health answers with the
// Card's block, so the two always match.
//
// A release build sets the values at link time with -ldflags -X on four
// string variables of the package github.com/xconn/xconn/internal/buildinfo
// (the linker accepts an internal package's path, so this works from any
// module that depends on xconn):
//
//	P=github.com/xconn/xconn/internal/buildinfo
//	go build -ldflags "-X $P.version=1.2.0 -X $P.gitTag=v1.2.0 \
//	  -X $P.gitRev=$(git rev-parse --short HEAD) \
//	  -X $P.buildTime=$(date -u +%y%m%d%H%M)" ./cmd/myconnector
//
// BuildTime is the protocol's compact form YYMMDDhhmm in UTC (Go layout
// "0601021504"; the spec's example is "2607241200"). Values left unset fall
// back to what the Go toolchain embeds in the binary (debug.ReadBuildInfo):
// the main module's version, the first 12 characters of vcs.revision and
// vcs.time. Whatever is still missing becomes "0.0.0-dev", "v"+version,
// "unknown" and "0000000000", so no field is ever empty.
//
// The values are fixed at link time; BuildInfo is safe for concurrent use
// and returns a new value on each call.
func BuildInfo() protocol.Build {
	bi := buildinfo.Get()
	return protocol.Build{Version: bi.Version, GitTag: bi.GitTag, GitRev: bi.GitRev, BuildTime: bi.BuildTime}
}

// NewID returns prefix followed by 26 lowercase base32 characters drawn from
// crypto/rand (128 bits): an unguessable identifier for sessions, message
// ids, file refs and the like, the same generator the SDK uses for its own
// ids ("cch_", "auth_", "msg_", ...). Safe for concurrent use.
func NewID(prefix string) string {
	return signurl.RandomID(prefix)
}

// Limits of a [Redactor].
const (
	// DefaultRedactorCapacity is the number of values a Redactor keeps when
	// its capacity is not set.
	DefaultRedactorCapacity = redact.DefaultMaxSecrets
	// MinRedactedLen is the shortest value [Redactor.Add] keeps: shorter
	// values would scrub common words.
	MinRedactedLen = redact.MinSecretLen
)

// Redactor is a bounded set of secret values (target tokens, API keys,
// passwords) that [Redactor.Scrub] replaces with "[REDACTED]" in any text.
// It is the redaction the SDK applies to its own logs, acks and errors;
// combine it with [NewRedactingHandler] to give a host or a connector's own
// logger the same protection.
//
// The caller owns a Redactor: make it with [NewRedactor] (or use the zero
// value, which holds up to DefaultRedactorCapacity values), add secrets as
// they become known, remove them when revoked. When it is full, adding a
// value drops the oldest one. It needs no closing. All methods are safe for
// concurrent use; a nil *Redactor scrubs nothing. A Redactor must not be
// copied after first use.
type Redactor struct {
	once sync.Once
	max  int
	s    *redact.Secrets
}

// NewRedactor returns an empty Redactor that holds at most capacity values
// (DefaultRedactorCapacity when capacity <= 0).
func NewRedactor(capacity int) *Redactor {
	return &Redactor{max: capacity}
}

func (r *Redactor) secrets() *redact.Secrets {
	if r == nil {
		return nil
	}
	r.once.Do(func() { r.s = redact.NewSecrets(r.max) })
	return r.s
}

// Add records values as secrets. Values shorter than MinRedactedLen bytes are
// ignored; adding a known value makes it the newest.
func (r *Redactor) Add(values ...string) { r.secrets().Add(values...) }

// Remove forgets values (for example a token that was revoked).
func (r *Redactor) Remove(values ...string) { r.secrets().Remove(values...) }

// Len returns the number of values held.
func (r *Redactor) Len() int { return r.secrets().Len() }

// Scrub returns text with every known secret replaced by "[REDACTED]". When
// one secret contains another, the longer one is replaced whole.
func (r *Redactor) Scrub(text string) string { return r.secrets().Scrub(text) }

// NewRedactingHandler wraps h in the SDK's redacting log handler. Attribute
// values whose key names a secret become "[REDACTED]": the key, ignoring case
// and with '-' read as '_', equals or ends with api_key, apikey, token,
// password, passwd, secret, authorization, access_code, cookie, bot_token or
// private_key ("X-Api-Key", "botToken" and "Set-Cookie" are secret,
// "token_count" is not). The message, every string attribute, and every
// error, fmt.Stringer or []byte attribute (rendered as a string) are scrubbed
// with r, in groups and in WithAttrs/WithGroup too. r may be nil (key-based
// redaction only); values added to r later apply to later records.
//
// The returned handler is safe for concurrent use when h is; it owns no
// goroutine and needs no closing.
func NewRedactingHandler(h slog.Handler, r *Redactor) slog.Handler {
	return redact.NewHandler(h, r.secrets())
}
