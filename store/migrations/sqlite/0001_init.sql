-- xconn store, initial schema (SQLite). Times are Unix nanoseconds, 0 = none.
CREATE TABLE instances (
	card_id      TEXT NOT NULL,
	connector_id TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	grace_until  INTEGER NOT NULL,
	PRIMARY KEY (card_id, connector_id)
);

CREATE TABLE channels (
	card_id      TEXT NOT NULL,
	channel_id   TEXT NOT NULL,
	connector_id TEXT NOT NULL,
	status       TEXT NOT NULL,
	flow_id      TEXT NOT NULL,
	binding      BLOB,
	display_name TEXT NOT NULL,
	account_hint TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (card_id, channel_id)
);
CREATE INDEX channels_connector ON channels (card_id, connector_id, created_at);

CREATE TABLE auth_sessions (
	card_id    TEXT NOT NULL,
	id         TEXT NOT NULL,
	channel_id TEXT NOT NULL,
	flow_id    TEXT NOT NULL,
	status     TEXT NOT NULL,
	expires_at INTEGER NOT NULL,
	state      BLOB,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (card_id, id)
);
CREATE INDEX auth_sessions_channel ON auth_sessions (card_id, channel_id);
CREATE INDEX auth_sessions_expiry ON auth_sessions (card_id, expires_at);

CREATE TABLE tool_calls (
	card_id      TEXT NOT NULL,
	channel_id   TEXT NOT NULL,
	tool_call_id TEXT NOT NULL,
	tool_id      TEXT NOT NULL,
	args_hash    TEXT NOT NULL,
	result       BLOB,
	err_code     TEXT NOT NULL,
	err_message  TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (card_id, channel_id, tool_call_id)
);
CREATE INDEX tool_calls_age ON tool_calls (card_id, created_at);

CREATE TABLE files (
	card_id    TEXT NOT NULL,
	ref        TEXT NOT NULL,
	channel_id TEXT NOT NULL,
	direction  TEXT NOT NULL,
	path       TEXT NOT NULL,
	filename   TEXT NOT NULL,
	mime_type  TEXT NOT NULL,
	file_type  TEXT NOT NULL,
	size       INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (card_id, ref)
);
CREATE INDEX files_channel ON files (card_id, channel_id);
CREATE INDEX files_expiry ON files (card_id, expires_at);

CREATE TABLE catalog (
	card_id      TEXT PRIMARY KEY,
	base_url     TEXT NOT NULL,
	api_key      BLOB,
	connector_id TEXT NOT NULL,
	card         BLOB,
	skill        BLOB,
	health       TEXT NOT NULL,
	last_error   TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);

CREATE TABLE user_channels (
	id            TEXT PRIMARY KEY,
	user_id       TEXT NOT NULL,
	card_id       TEXT NOT NULL,
	channel_id    TEXT NOT NULL,
	session_id    TEXT NOT NULL,
	authenticated INTEGER NOT NULL,
	descriptor    BLOB,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	UNIQUE (user_id, card_id, channel_id)
);
CREATE INDEX user_channels_card ON user_channels (card_id, created_at, id);

CREATE TABLE leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	expires_at INTEGER NOT NULL
);

CREATE TABLE outbox (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	queue        TEXT NOT NULL,
	channel      TEXT NOT NULL,
	message_id   TEXT NOT NULL,
	payload      BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	attempts     INTEGER NOT NULL,
	next_attempt INTEGER NOT NULL,
	last_error   TEXT NOT NULL,
	UNIQUE (queue, channel, message_id)
);
CREATE INDEX outbox_channel ON outbox (queue, channel, seq);
CREATE INDEX outbox_expiry ON outbox (queue, expires_at);
CREATE INDEX outbox_due ON outbox (queue, next_attempt, seq);

CREATE TABLE outbox_outcomes (
	queue      TEXT NOT NULL,
	channel    TEXT NOT NULL,
	message_id TEXT NOT NULL,
	kind       TEXT NOT NULL,
	code       TEXT NOT NULL,
	message    TEXT NOT NULL,
	attempts   INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (queue, channel, message_id)
);
CREATE INDEX outbox_outcomes_at ON outbox_outcomes (queue, at);
CREATE INDEX outbox_outcomes_channel ON outbox_outcomes (queue, channel, at);

CREATE TABLE inbox (
	queue      TEXT NOT NULL,
	channel    TEXT NOT NULL,
	message_id TEXT NOT NULL,
	hash       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (queue, channel, message_id)
);
CREATE INDEX inbox_channel ON inbox (queue, channel, at);
CREATE INDEX inbox_at ON inbox (queue, at);
