-- One index fewer to write per enqueued and per acked message (issue 22):
-- an enqueue no longer reads a channel's earliest expiry through
-- outbox_channel_expiry (SQLite answers it from the writer's channel cache;
-- a cache fill and PostgreSQL read it through outbox_channel, a channel's
-- few entries), and the expiry sweep, which runs every TTL/2, reads the
-- queue's entries instead.
DROP INDEX outbox_channel_expiry;
