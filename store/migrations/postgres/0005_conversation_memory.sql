-- Conversation memory of host agents (see memory.go): one row per message
-- of a conversation (usually a user channel id), oldest first by seq.
-- data is sealed like channels.binding; size is the plaintext length the
-- per-conversation bound counts.
CREATE TABLE conversation_memory (
	conversation TEXT NOT NULL,
	seq          BIGINT NOT NULL,
	data         BYTEA NOT NULL,
	size         BIGINT NOT NULL,
	created_at   BIGINT NOT NULL,
	PRIMARY KEY (conversation, seq)
);
