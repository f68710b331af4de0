-- The earliest expiry of one channel, read at every enqueue (expiry is
-- checked at enqueue), in O(log n) instead of a scan of the channel.
CREATE INDEX outbox_channel_expiry ON outbox (queue, channel, expires_at);
