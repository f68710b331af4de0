package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// ucEntry is one user channel as held by the [channelIndex]: the stored
// record and its Descriptor decoded once. An entry is immutable; a write
// replaces it.
type ucEntry struct {
	uc store.UserChannel
	// desc is uc.Descriptor decoded, nil when absent or invalid. Shared by
	// readers: never modified.
	desc *protocol.Descriptor
}

func newEntry(uc store.UserChannel) *ucEntry {
	e := &ucEntry{uc: uc}
	if len(uc.Descriptor) > 0 {
		if d, err := protocol.ParseDescriptor(uc.Descriptor); err == nil {
			e.desc = d
		}
	}
	return e
}

// usable reports whether the channel can run toolID (section 10.1 step 2):
// authenticated, its Descriptor connected or degraded, the tool available
// and not denied by the target ("" checks the channel only).
func (e *ucEntry) usable(toolID string) bool {
	if !e.uc.Authenticated || e.desc == nil {
		return false
	}
	switch e.desc.Connection.Status {
	case protocol.StatusConnected, protocol.StatusDegraded:
	default:
		return false
	}
	return toolID == "" || e.desc.ToolAvailable(toolID)
}

type userCardKey struct{ userID, cardID string }

// channelIndex is the host's in-memory index of user channels: per (user,
// card) the complete, ordered list of the user's channels of that
// connector (as [store.HostStore.ListUserChannels] orders them), and by
// user channel id. The store stays the source of truth: every write goes
// to the store first and the index then takes the record read back from
// it; a (user, card) list not held is read from the store and kept. At
// most limit channels are held; beyond it whole lists are dropped. It
// assumes this host is the only writer of the store's user channels. It is
// owned by the [Host] and safe for concurrent use.
type channelIndex struct {
	st    store.HostStore
	limit int

	// wmu serialises store writes with their index update, and store
	// loads with their install, so that the index never takes a record
	// older than the store's.
	wmu sync.Mutex

	mu    sync.RWMutex
	lists map[userCardKey][]*ucEntry // complete, sorted by CreatedAt, ID; never modified in place
	byID  map[string]*ucEntry        // every entry of lists
}

func newChannelIndex(st store.HostStore, limit int) *channelIndex {
	return &channelIndex{st: st, limit: limit, lists: map[userCardKey][]*ucEntry{}, byID: map[string]*ucEntry{}}
}

func entryOrder(a, b *ucEntry) int {
	if c := a.uc.CreatedAt.Compare(b.uc.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.uc.ID, b.uc.ID)
}

// list returns the user's channels of cardID in store order (userID ""
// reads every user's channels from the store). The slice is shared:
// callers must not modify it.
func (x *channelIndex) list(ctx context.Context, userID, cardID string) ([]*ucEntry, error) {
	if userID == "" { // every user's channels: not indexed, read the store
		ucs, err := x.st.ListUserChannels(ctx, userID, cardID)
		if err != nil {
			return nil, err
		}
		l := make([]*ucEntry, len(ucs))
		for i, uc := range ucs {
			l[i] = newEntry(uc)
		}
		return l, nil
	}
	k := userCardKey{userID, cardID}
	x.mu.RLock()
	l, ok := x.lists[k]
	x.mu.RUnlock()
	if ok {
		return l, nil
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	return x.loadLocked(ctx, k)
}

// loadLocked reads the list of k from the store and installs it; x.wmu is
// held.
func (x *channelIndex) loadLocked(ctx context.Context, k userCardKey) ([]*ucEntry, error) {
	x.mu.RLock()
	l, ok := x.lists[k]
	x.mu.RUnlock()
	if ok {
		return l, nil
	}
	ucs, err := x.st.ListUserChannels(ctx, k.userID, k.cardID)
	if err != nil {
		return nil, err
	}
	l = make([]*ucEntry, len(ucs))
	for i, uc := range ucs {
		l[i] = newEntry(uc)
	}
	x.mu.Lock()
	x.installLocked(k, l)
	x.mu.Unlock()
	return l, nil
}

// installLocked sets the list of k, dropping other lists while the index
// holds more than its limit; a list larger than the limit is not kept.
// x.mu is held for writing.
func (x *channelIndex) installLocked(k userCardKey, l []*ucEntry) {
	x.dropLocked(k)
	if len(l) > x.limit {
		return
	}
	for other := range x.lists {
		if len(x.byID)+len(l) <= x.limit {
			break
		}
		x.dropLocked(other)
	}
	x.lists[k] = l
	for _, e := range l {
		x.byID[e.uc.ID] = e
	}
}

// dropLocked forgets the list of k; x.mu is held for writing.
func (x *channelIndex) dropLocked(k userCardKey) {
	for _, e := range x.lists[k] {
		delete(x.byID, e.uc.ID)
	}
	delete(x.lists, k)
}

// get returns a user channel by id (store.ErrNotFound when there is none).
func (x *channelIndex) get(ctx context.Context, id string) (*ucEntry, error) {
	x.mu.RLock()
	e, ok := x.byID[id]
	x.mu.RUnlock()
	if ok {
		return e, nil
	}
	x.wmu.Lock()
	defer x.wmu.Unlock()
	uc, err := x.st.GetUserChannel(ctx, id)
	if err != nil {
		return nil, err
	}
	l, err := x.loadLocked(ctx, userCardKey{uc.UserID, uc.CardID})
	if err == nil {
		for _, e := range l {
			if e.uc.ID == id {
				return e, nil
			}
		}
	}
	return newEntry(uc), nil
}

// put writes uc to the store, then replaces its entry with the record read
// back (the store keeps CreatedAt and fills the timestamps).
func (x *channelIndex) put(ctx context.Context, uc store.UserChannel) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	werr := x.st.PutUserChannel(ctx, uc)
	var fresh store.UserChannel
	var rerr error
	if werr == nil {
		fresh, rerr = x.st.GetUserChannel(ctx, uc.ID)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := userCardKey{uc.UserID, uc.CardID}
	if old, ok := x.byID[uc.ID]; ok {
		if oldKey := (userCardKey{old.uc.UserID, old.uc.CardID}); oldKey != k {
			x.dropLocked(oldKey)
		}
	}
	l, held := x.lists[k]
	switch {
	case werr != nil || rerr != nil:
		// The store's state is not known here: read it again on next use.
		x.dropLocked(k)
	case held:
		n := make([]*ucEntry, 0, len(l)+1)
		for _, e := range l {
			if e.uc.ID != uc.ID {
				n = append(n, e)
			}
		}
		e := newEntry(fresh)
		i, _ := slices.BinarySearchFunc(n, e, entryOrder)
		n = slices.Insert(n, i, e)
		x.installLocked(k, n)
	}
	if werr != nil {
		return werr
	}
	if rerr != nil {
		return fmt.Errorf("read back user channel %s: %w", uc.ID, rerr)
	}
	return nil
}

// delete removes a user channel from the store, then from the index. An
// absent record is not an error.
func (x *channelIndex) delete(ctx context.Context, id string) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	err := x.st.DeleteUserChannel(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.byID[id]; ok {
		k := userCardKey{e.uc.UserID, e.uc.CardID}
		if err != nil {
			x.dropLocked(k)
		} else {
			n := slices.DeleteFunc(slices.Clone(x.lists[k]), func(o *ucEntry) bool { return o.uc.ID == id })
			x.lists[k] = n
			delete(x.byID, id)
		}
	}
	return err
}

// preload loads every user channel of the connectors cardIDs, up to the
// limit (the rest is read on first use).
func (x *channelIndex) preload(ctx context.Context, cardIDs []string) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	for _, cardID := range cardIDs {
		ucs, err := x.st.ListUserChannels(ctx, "", cardID)
		if err != nil {
			return fmt.Errorf("load user channels of %s: %w", cardID, err)
		}
		byUser := map[string][]*ucEntry{}
		var users []string
		for _, uc := range ucs {
			if _, ok := byUser[uc.UserID]; !ok {
				users = append(users, uc.UserID)
			}
			byUser[uc.UserID] = append(byUser[uc.UserID], newEntry(uc))
		}
		x.mu.Lock()
		for _, u := range users {
			l := byUser[u]
			if len(x.byID)+len(l) > x.limit {
				break
			}
			x.installLocked(userCardKey{u, cardID}, l)
		}
		x.mu.Unlock()
	}
	return nil
}
