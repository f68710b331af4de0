-- Conversation memory of host agents (see memory.go): one row per message
-- of a conversation (usually a user channel id), oldest first by seq.
-- data is sealed like channels.binding; size is the plaintext length the
-- per-conversation bound counts. Clustered on its key: a conversation is
-- one range of the B-tree.
CREATE TABLE conversation_memory (
	conversation TEXT NOT NULL,
	seq          INTEGER NOT NULL,
	data         BLOB NOT NULL,
	size         INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (conversation, seq)
) WITHOUT ROWID;
