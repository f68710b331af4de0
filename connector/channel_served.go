package connector

// Served reports whether an xAgent data-plane connection has the channel
// open right now (a channel.open on a live socket): while it does not, a
// published message waits in the outbox until one does. A connector shows
// it to its users as "the agent is offline". Safe for concurrent use.
func (c *Channel) Served() bool {
	st, err := c.srv.channelState(c.id)
	return err == nil && st.open != nil
}
