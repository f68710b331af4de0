package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// Delivery progress: what the target already has of one assistant message
// (the parts posted, the id of a streamed message to edit), so that a
// redelivered message, after a failed attempt or a restart, posts only
// what is missing. Every connector whose delivery takes several target
// calls needs it.
const (
	// MaxProgressRecords bounds the messages whose progress a channel
	// keeps; the oldest record goes first. Messages of a channel are
	// delivered one after the other, so a few are enough.
	MaxProgressRecords = 16
	// progressKey is the channel state key of the records.
	progressKey = "xconn.delivery_progress"
	// progressSaveTimeout bounds one save.
	progressSaveTimeout = 10 * time.Second
)

type progressRecord struct {
	ID    string          `json:"id"`
	Value json.RawMessage `json:"v"`
}

// progressLocks serialises the read-modify-write of one channel's records.
type progressLocks struct {
	seed  maphash.Seed
	locks [64]sync.Mutex
}

func (p *progressLocks) lock(channelID string) func() {
	m := &p.locks[maphash.String(p.seed, channelID)%uint64(len(p.locks))]
	m.Lock()
	return m.Unlock
}

// LoadProgress decodes into v the delivery progress stored for messageID
// on the channel and reports whether there was one.
func (c *Channel) LoadProgress(ctx context.Context, messageID string, v any) (bool, error) {
	defer c.srv.progress.lock(c.id)()
	return c.loadRecord(ctx, progressKey, messageID, v)
}

// SaveProgress records v as the delivery progress of messageID. It records
// what the target already has, so it completes even when ctx ends
// meanwhile (a closing socket), bounded by its own timeout. The channel
// keeps the records of its MaxProgressRecords latest messages, within its
// state bounds (see SaveState).
func (c *Channel) SaveProgress(ctx context.Context, messageID string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("connector: encode progress of %s: %w", messageID, err)
	}
	return c.updateProgress(ctx, messageID, b)
}

// ClearProgress drops the record of messageID (its delivery finished).
func (c *Channel) ClearProgress(ctx context.Context, messageID string) error {
	return c.updateProgress(ctx, messageID, nil)
}

func (c *Channel) updateProgress(ctx context.Context, messageID string, value json.RawMessage) error {
	return c.updateRecords(ctx, progressKey, func(list []progressRecord) ([]progressRecord, bool) {
		list = slices.DeleteFunc(list, func(r progressRecord) bool { return r.ID == messageID })
		if value != nil {
			list = append(list, progressRecord{ID: messageID, Value: value})
		}
		return list[max(0, len(list)-MaxProgressRecords):], true
	})
}

// loadRecord decodes into v the record of id in the record list under
// state key, and reports whether there was one.
func (c *Channel) loadRecord(ctx context.Context, key, id string, v any) (bool, error) {
	var list []progressRecord
	if _, err := c.LoadState(ctx, key, &list); err != nil {
		return false, err
	}
	i := slices.IndexFunc(list, func(r progressRecord) bool { return r.ID == id })
	if i < 0 {
		return false, nil
	}
	if err := json.Unmarshal(list[i].Value, v); err != nil {
		return false, fmt.Errorf("connector: decode %s record of %s: %w", key, id, err)
	}
	return true, nil
}

// updateRecords replaces the record list under state key by f's result
// when f reports a change, under the channel's record lock; an empty list
// deletes the key. It completes even when ctx ends meanwhile, bounded by
// its own timeout.
func (c *Channel) updateRecords(ctx context.Context, key string, f func([]progressRecord) ([]progressRecord, bool)) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressSaveTimeout)
	defer cancel()
	defer c.srv.progress.lock(c.id)()
	var list []progressRecord
	if _, err := c.LoadState(ctx, key, &list); err != nil {
		return err
	}
	list, changed := f(list)
	switch {
	case !changed:
		return nil
	case len(list) == 0:
		return c.DeleteState(ctx, key)
	}
	return c.SaveState(ctx, key, list)
}
