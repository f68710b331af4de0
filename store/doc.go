// Package store is the durable state of both sides of xconn over
// database/sql: the Connector Server's runtime instances, channels with their
// target bindings and bounded key/value state, sign-in sessions, tool-call
// idempotency records and files ([ConnectorStore]); the host's catalog and
// user→channel ownership index ([HostStore]); leases for failover
// ([Leaser]); and the outbox and inbox of package delivery.
//
// [Open] chooses the backend by DSN: "sqlite:PATH" (pure Go modernc.org/sqlite
// in WAL mode, the default, one file in the data directory) or
// "postgres://..." (pgx). Numbered migrations are embedded and applied once,
// even when two processes start together. Secrets (channel bindings and
// state values, sign-in state, API keys) are sealed with AES-256-GCM under a
// key given in [Options.Key] or kept in DATADIR/secret.key (mode 0600).
//
// Every table is bounded (see [Options] and README.md). On SQLite the
// delivery writes of concurrent callers share one transaction (group commit,
// [Options.GroupCommitMax], [Options.GroupCommitDelay]); a call returns only
// after its transaction committed. A [*DB] is safe for concurrent use; its
// Close stops the committer and waits for it.
package store
