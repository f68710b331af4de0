-- Fewer indexes to write per enqueued and per acked message (issue 22).
--
-- outbox_channel_expiry: an enqueue no longer reads a channel's earliest
-- expiry through it (the writer's channel cache answers; a cache fill
-- reads the channel's few entries), and the expiry sweep, which runs every
-- TTL/2, reads the queue's entries instead.
--
-- outbox_channel (queue, channel, seq): the unique index on (queue,
-- channel, message_id) holds the rowid, which is seq, so a channel's head
-- (its lowest seq) is read from that index's few entries of the channel.
-- Both indexes are keyed by channel: each commit wrote one leaf page of
-- each per channel it touched.
DROP INDEX outbox_channel_expiry;
DROP INDEX outbox_channel;
