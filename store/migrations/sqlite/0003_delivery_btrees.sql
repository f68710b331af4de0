-- Fewer B-tree writes per delivered message (issue 8).
--
-- outbox: seq without AUTOINCREMENT (no sqlite_sequence write per insert; a
-- new seq is still above every pending one, which is all a channel's order
-- needs) and without index outbox_expiry: the expiry sweep, a rare
-- statement, reads outbox_channel_expiry instead.
CREATE TABLE outbox_new (
	seq          INTEGER PRIMARY KEY,
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
INSERT INTO outbox_new (seq, queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error)
	SELECT seq, queue, channel, message_id, payload, created_at, expires_at, attempts, next_attempt, last_error FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_new RENAME TO outbox;
CREATE INDEX outbox_channel ON outbox (queue, channel, seq);
CREATE INDEX outbox_channel_expiry ON outbox (queue, channel, expires_at);
CREATE INDEX outbox_due ON outbox (queue, next_attempt, seq);

-- outbox_outcomes: clustered on its key (WITHOUT ROWID: one B-tree fewer)
-- and without index outbox_outcomes_channel (a channel's history is read
-- rarely, through the key's prefix).
CREATE TABLE outbox_outcomes_new (
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
) WITHOUT ROWID;
INSERT INTO outbox_outcomes_new (queue, channel, message_id, kind, code, message, attempts, created_at, expires_at, at)
	SELECT queue, channel, message_id, kind, code, message, attempts, created_at, expires_at, at FROM outbox_outcomes;
DROP TABLE outbox_outcomes;
ALTER TABLE outbox_outcomes_new RENAME TO outbox_outcomes;
CREATE INDEX outbox_outcomes_at ON outbox_outcomes (queue, at);

-- inbox: clustered on its key, and the record count of each channel kept
-- in inbox_counts, so that bounding a channel after an insert reads one
-- row instead of counting the channel's records.
CREATE TABLE inbox_new (
	queue      TEXT NOT NULL,
	channel    TEXT NOT NULL,
	message_id TEXT NOT NULL,
	hash       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (queue, channel, message_id)
) WITHOUT ROWID;
INSERT INTO inbox_new (queue, channel, message_id, hash, at)
	SELECT queue, channel, message_id, hash, at FROM inbox;
DROP TABLE inbox;
ALTER TABLE inbox_new RENAME TO inbox;
CREATE INDEX inbox_channel ON inbox (queue, channel, at);
CREATE INDEX inbox_at ON inbox (queue, at);

CREATE TABLE inbox_counts (
	queue   TEXT NOT NULL,
	channel TEXT NOT NULL,
	n       INTEGER NOT NULL,
	PRIMARY KEY (queue, channel)
) WITHOUT ROWID;
INSERT INTO inbox_counts (queue, channel, n) SELECT queue, channel, COUNT(*) FROM inbox GROUP BY queue, channel;
