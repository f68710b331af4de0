-- Fewer index writes per delivered message (issue 8): the expiry sweep, a
-- rare statement, reads outbox_channel_expiry instead of outbox_expiry; a
-- channel's outcome history is read rarely, through the key's prefix.
DROP INDEX outbox_expiry;
DROP INDEX outbox_outcomes_channel;

-- The record count of each inbox channel, so that bounding a channel after
-- an insert reads one row instead of counting the channel's records.
CREATE TABLE inbox_counts (
	queue   TEXT NOT NULL,
	channel TEXT NOT NULL,
	n       BIGINT NOT NULL,
	PRIMARY KEY (queue, channel)
);
INSERT INTO inbox_counts (queue, channel, n) SELECT queue, channel, COUNT(*) FROM inbox GROUP BY queue, channel;
