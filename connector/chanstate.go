package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xconn/xconn/store"
)

// SaveState stores v (JSON-encoded) under key in the channel's durable
// state: a small key/value store for what a connector must remember
// across restarts (reply context tokens, poll offsets, the last chat).
// Values are encrypted at rest. The state is bounded per channel
// (store.MaxChannelStateKeys keys of at most store.MaxChannelStateKeyBytes,
// values of at most store.MaxChannelStateValueBytes, store.MaxChannelStateBytes
// in all; beyond them SaveState fails with an error that errors.Is
// store.ErrChannelStateFull and changes nothing). It lives as long as the
// channel's binding: logout and deletion of the channel clear it. Safe
// for concurrent use.
func (c *Channel) SaveState(ctx context.Context, key string, v any) error {
	if _, err := c.srv.channelState(c.id); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("connector: encode state %q: %w", key, err)
	}
	if err := c.srv.opts.Store.PutChannelState(ctx, c.srv.cardID(), c.id, key, b); err != nil {
		return fmt.Errorf("connector: save state %q of %s: %w", key, c.id, err)
	}
	return nil
}

// LoadState decodes the value of key into v and reports whether it was
// set.
func (c *Channel) LoadState(ctx context.Context, key string, v any) (bool, error) {
	b, err := c.srv.opts.Store.GetChannelState(ctx, c.srv.cardID(), c.id, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("connector: load state %q of %s: %w", key, c.id, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("connector: decode state %q of %s: %w", key, c.id, err)
	}
	return true, nil
}

// DeleteState removes key from the channel's state (no error when absent).
func (c *Channel) DeleteState(ctx context.Context, key string) error {
	if err := c.srv.opts.Store.DeleteChannelState(ctx, c.srv.cardID(), c.id, key); err != nil {
		return fmt.Errorf("connector: delete state %q of %s: %w", key, c.id, err)
	}
	return nil
}

// cardID is the connector_card_id (known once New has run).
func (s *Server) cardID() string {
	if s.opts.Card != nil {
		return s.opts.Card.ConnectorCardID
	}
	return s.opts.Identity.CardID
}
