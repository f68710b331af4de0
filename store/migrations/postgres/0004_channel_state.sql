-- Durable per-channel key/value state of a connector (reply context tokens,
-- poll offsets, the last chat), bounded per channel by the store (see
-- channelstate.go). value is sealed like channels.binding; size is the
-- plaintext size the bound counts, len(state_key) + len(value) in bytes.
CREATE TABLE channel_state (
	card_id    TEXT NOT NULL,
	channel_id TEXT NOT NULL,
	state_key  TEXT NOT NULL,
	value      BYTEA NOT NULL,
	size       BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (card_id, channel_id, state_key)
);
