package host

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// userLockStripes is the number of mutexes that serialise the
// read-modify-write cycles of user channel records (by record id).
const userLockStripes = 64

// channelCache is the host's bounded read-through cache of its users'
// channels: per user, per connector, the stored records in store order with
// their Descriptor decoded once and an index from tool_id to the first
// channel that can run it and from session to its bound channel. Tool
// resolution ([Host.Invoke], [Host.Tools]) and inbound routing read it
// instead of SQLite.
//
// The store stays the source of truth and the cache never takes a record
// from a write: every write of a user channel invalidates its user before
// and after the store write and, while it runs, makes reads of that user go
// to the store (see [Host.putUserChannel]). A loader records the user's
// generation before it reads the store and installs what it read only when
// that generation is unchanged (the same entry, not invalidated meanwhile)
// and no write is in progress, so a read that raced a write can never
// overwrite the invalidation that followed the write, and a read that
// starts after a write committed always sees it. Entries are evicted least
// recently used first so that at most limit channels (plus one slot per
// user) are held; a user with more channels than that is read from the
// store on every use.
//
// The cache also holds the record locks that make the read-modify-write of
// a record (and of its route) atomic among the host's writers (logout,
// descriptor push, reopen, sign-in, session binding, delete). It assumes this host
// is the only writer of its store's user channels.
//
// It is owned by the [Host] and safe for concurrent use.
type channelCache struct {
	st    store.HostStore
	limit int
	seed  maphash.Seed

	writeMu [userLockStripes]sync.Mutex

	mu    sync.Mutex
	users map[string]*userChannels
	lru   list.List // of *userChannels, most recently used at the front
	held  int       // sum of the users' cost
	// writeSeq counts the starts and ends of user channel writes (and
	// invalidateAll), writing the writes in progress: a record listed
	// while writing was 0 is still the stored one while writeSeq has not
	// moved (see writeMark).
	writeSeq uint64
	writing  int
	// owners maps a record id to its user and connector (which never
	// change), so that a lookup by id alone can use the cache; a hint,
	// emptied when it reaches limit entries.
	owners map[string]owner
}

type owner struct{ userID, cardID string }

// userChannels is the cache entry of one user. An entry leaves the map only
// when it is evicted and is never reused after: a loader holding a removed
// entry installs nothing.
type userChannels struct {
	userID  string
	gen     uint64                   // bumped by every invalidation
	writers int                      // store writes in progress; while > 0 nothing is cached
	cards   map[string]*cardChannels // loaded lists, by card id
	cost    int                      // 1 + channels held
	elem    *list.Element
}

// cardChannels is one user's channels of one connector as the store lists
// them (by CreatedAt, then ID). It is immutable once built and shared by
// readers.
type cardChannels struct {
	list      []*cachedChannel
	byID      map[string]*cachedChannel
	bySession map[string]*cachedChannel // first channel bound to a session
	firstFor  map[string]*cachedChannel // tool_id -> first usable channel offering it
}

// cachedChannel is one stored user channel with what tool resolution needs
// from its Descriptor. Immutable; uc.Descriptor is shared and must not be
// modified (copy it before handing the record out).
type cachedChannel struct {
	uc       store.UserChannel
	parsed   bool // the Descriptor decodes
	status   protocol.ConnectionStatus
	tools    []string // tool_ids the Descriptor marks available and not denied
	profiles []protocol.Profile
}

func newChannelCache(st store.HostStore, limit int) *channelCache {
	return &channelCache{st: st, limit: limit, seed: maphash.MakeSeed(), users: map[string]*userChannels{}, owners: map[string]owner{}}
}

func newCachedChannel(uc store.UserChannel) *cachedChannel {
	c := &cachedChannel{uc: uc}
	if len(uc.Descriptor) == 0 {
		return c
	}
	d, err := protocol.ParseDescriptor(uc.Descriptor)
	if err != nil {
		return c
	}
	c.parsed, c.status, c.profiles = true, d.Connection.Status, d.Connection.Profiles
	for _, t := range d.Tools {
		if d.ToolAvailable(t.ToolID) && !slices.Contains(c.tools, t.ToolID) {
			c.tools = append(c.tools, t.ToolID)
		}
	}
	return c
}

// usable reports whether the channel can run toolID (section 10.1 step 2):
// authenticated, its Descriptor connected or degraded, the tool available
// and not denied by the target ("" checks the channel only).
func (c *cachedChannel) usable(toolID string) bool {
	if !c.uc.Authenticated || !c.parsed {
		return false
	}
	switch c.status {
	case protocol.StatusConnected, protocol.StatusDegraded:
	default:
		return false
	}
	return toolID == "" || slices.Contains(c.tools, toolID)
}

// record returns a copy of the stored record that the caller may modify.
func (c *cachedChannel) record() store.UserChannel {
	uc := c.uc
	uc.Descriptor = slices.Clone(uc.Descriptor)
	return uc
}

func newCardChannels(ucs []store.UserChannel) *cardChannels {
	cc := &cardChannels{list: make([]*cachedChannel, len(ucs)), byID: make(map[string]*cachedChannel, len(ucs))}
	for i, uc := range ucs {
		c := newCachedChannel(uc)
		cc.list[i] = c
		cc.byID[uc.ID] = c
		if uc.SessionID != "" {
			if cc.bySession == nil {
				cc.bySession = map[string]*cachedChannel{}
			}
			if _, ok := cc.bySession[uc.SessionID]; !ok {
				cc.bySession[uc.SessionID] = c
			}
		}
		if !c.usable("") {
			continue
		}
		for _, id := range c.tools {
			if cc.firstFor == nil {
				cc.firstFor = map[string]*cachedChannel{}
			}
			if _, ok := cc.firstFor[id]; !ok {
				cc.firstFor[id] = c
			}
		}
	}
	return cc
}

// channels returns userID's channels of cardID, from the cache or else
// read from the store (and cached when nothing changed meanwhile); userID
// "" reads every user's channels from the store, uncached. While a write
// of the user's channels is in progress it reads the store and caches
// nothing, so that a read that starts after a write committed never sees
// the record before it.
func (c *channelCache) channels(ctx context.Context, userID, cardID string) (*cardChannels, error) {
	if userID == "" { // every user's channels (the store's meaning of ""): not cached
		ucs, err := c.st.ListUserChannels(ctx, userID, cardID)
		if err != nil {
			return nil, err
		}
		return newCardChannels(ucs), nil
	}
	c.mu.Lock()
	u := c.users[userID]
	if u != nil {
		c.lru.MoveToFront(u.elem)
		if cc := u.cards[cardID]; cc != nil {
			c.mu.Unlock()
			return cc, nil
		}
	} else {
		u = c.addLocked(userID)
	}
	gen := u.gen
	c.mu.Unlock()

	ucs, err := c.st.ListUserChannels(ctx, userID, cardID)
	if err != nil {
		return nil, err
	}
	cc := newCardChannels(ucs)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users[userID] != u || u.gen != gen || u.writers > 0 || u.cards[cardID] != nil || u.cost+len(ucs) > c.limit {
		return cc, nil // invalidated, evicted or being written meanwhile, or too large: not kept
	}
	if u.cards == nil {
		u.cards = map[string]*cardChannels{}
	}
	u.cards[cardID] = cc
	u.cost += len(ucs)
	c.held += len(ucs)
	c.evictLocked(u)
	for _, uc := range ucs {
		c.learnLocked(uc)
	}
	return cc, nil
}

// learnLocked records the owner of a record; c.mu is held.
func (c *channelCache) learnLocked(uc store.UserChannel) {
	if _, ok := c.owners[uc.ID]; ok {
		return
	}
	if len(c.owners) >= c.limit {
		clear(c.owners)
	}
	c.owners[uc.ID] = owner{uc.UserID, uc.CardID}
}

// learn records the owner of a record read from the store.
func (c *channelCache) learn(uc store.UserChannel) {
	c.mu.Lock()
	c.learnLocked(uc)
	c.mu.Unlock()
}

// ownerOf returns the user and connector of a record, when known.
func (c *channelCache) ownerOf(ucID string) (owner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.owners[ucID]
	return o, ok
}

// addLocked adds an empty entry for userID; c.mu is held.
func (c *channelCache) addLocked(userID string) *userChannels {
	u := &userChannels{userID: userID, cost: 1}
	u.elem = c.lru.PushFront(u)
	c.users[userID] = u
	c.held++
	c.evictLocked(u)
	return u
}

// evictLocked drops least recently used users other than keep, and other
// than users being written, while more than the limit is held; c.mu is
// held.
func (c *channelCache) evictLocked(keep *userChannels) {
	e := c.lru.Back()
	for c.held > c.limit && e != nil {
		u := e.Value.(*userChannels)
		e = e.Prev()
		if u != keep && u.writers == 0 {
			c.removeLocked(u)
		}
	}
}

func (c *channelCache) removeLocked(u *userChannels) {
	c.lru.Remove(u.elem)
	delete(c.users, u.userID)
	c.held -= u.cost
}

// clearLocked forgets u's lists and bumps its generation, so that loads
// in flight install nothing; c.mu is held.
func (c *channelCache) clearLocked(u *userChannels) {
	u.gen++
	c.held -= u.cost - 1
	u.cost, u.cards = 1, nil
}

// beginWrite marks a store write of userID's channels as in progress: until
// the returned function is called (after the write, whether or not it
// succeeded) the user's channels are read from the store and not cached,
// and loads that started before install nothing.
func (c *channelCache) beginWrite(userID string) (end func()) {
	c.mu.Lock()
	u := c.users[userID]
	if u == nil {
		u = c.addLocked(userID)
	}
	u.writers++
	c.writeSeq++
	c.writing++
	c.clearLocked(u)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.writeSeq++
		c.writing--
		u.writers--
		if c.users[userID] == u {
			c.clearLocked(u)
			c.evictLocked(nil)
		}
		c.mu.Unlock()
	}
}

// invalidate forgets the cached channels of userID; loads that started
// before it install nothing.
func (c *channelCache) invalidate(userID string) {
	c.mu.Lock()
	if u := c.users[userID]; u != nil {
		c.clearLocked(u)
	}
	c.mu.Unlock()
}

// invalidateAll forgets every cached channel.
func (c *channelCache) invalidateAll() {
	c.mu.Lock()
	c.writeSeq++
	for _, u := range c.users {
		c.clearLocked(u)
	}
	c.mu.Unlock()
}

// writeMark returns a mark of the host's user channel writes to take
// before reading records from the store, and false while a write is in
// progress (the records read may then be older than the store's).
func (c *channelCache) writeMark() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeSeq, c.writing == 0
}

// unwrittenSince reports whether no user channel write started since mark
// was taken: a record read from the store after writeMark (which reported
// true) is then still the stored one. Like the cache, it assumes this host
// is the only writer of its store's user channels.
func (c *channelCache) unwrittenSince(mark uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeSeq == mark && c.writing == 0
}

// lockRecord serialises the read-modify-write cycles of the user channel
// record ucID (and its route) among the host's writers; call the returned
// function to unlock. Never take it while holding a session's mutex or
// another record's lock.
func (c *channelCache) lockRecord(ucID string) func() {
	m := &c.writeMu[maphash.String(c.seed, ucID)%userLockStripes]
	m.Lock()
	return m.Unlock
}

// lockAll takes every record lock, for a write of several records at once
// ([Host.BindSession]); call the returned function to unlock.
func (c *channelCache) lockAll() func() {
	for i := range c.writeMu {
		c.writeMu[i].Lock()
	}
	return func() {
		for i := range c.writeMu {
			c.writeMu[i].Unlock()
		}
	}
}

// len reports the users and the channels held (for tests).
func (c *channelCache) len() (users, channels int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.users), c.held - len(c.users)
}

// userCards returns the user's channels of cardID through the cache.
func (h *Host) userCards(ctx context.Context, userID, cardID string) (*cardChannels, error) {
	cc, err := h.chans.channels(ctx, userID, cardID)
	if err != nil {
		return nil, fmt.Errorf("list user channels: %w", err)
	}
	return cc, nil
}

// userChannel returns one of userID's channels of cardID by id, through the
// cache (store.ErrNotFound when there is none).
func (h *Host) userChannel(ctx context.Context, userID, cardID, ucID string) (*cachedChannel, error) {
	cc, err := h.userCards(ctx, userID, cardID)
	if err != nil {
		return nil, err
	}
	c := cc.byID[ucID]
	if c == nil {
		return nil, fmt.Errorf("user channel %s: %w", ucID, store.ErrNotFound)
	}
	return c, nil
}

// channelByID returns a user channel by id with its connector runtime,
// through the cache when its owner is known (else read from the store), with
// the errors of [Host.channelRuntime]. The record is shared: read only.
func (h *Host) channelByID(ctx context.Context, ucID string) (*cachedChannel, *runtime, error) {
	if o, ok := h.chans.ownerOf(ucID); ok {
		if c, err := h.userChannel(ctx, o.userID, o.cardID, ucID); err == nil {
			rt := h.runtime(o.cardID)
			if rt == nil {
				return c, nil, fmt.Errorf("host: channel %s: %s: %w", ucID, o.cardID, ErrUnknownConnector)
			}
			return c, rt, nil
		}
	}
	uc, rt, err := h.channelRuntime(ctx, ucID)
	if uc.ID == "" { // not found, or the store failed
		return nil, nil, err
	}
	h.chans.learn(uc)
	return newCachedChannel(uc), rt, err
}

// putUserChannel writes a record and invalidates its user's cached
// channels. Every write of a user channel goes through it or
// [Host.deleteUserChannel]; a read-modify-write runs under
// h.chans.lockRecord(uc.ID) (see [Host.updateUserChannel]).
func (h *Host) putUserChannel(ctx context.Context, uc store.UserChannel) error {
	end := h.chans.beginWrite(uc.UserID)
	defer end() // also on error: the store's state is not known
	return h.st.PutUserChannel(ctx, uc)
}

// deleteUserChannel deletes a record (absent is not an error) and
// invalidates its user's cached channels.
func (h *Host) deleteUserChannel(ctx context.Context, uc store.UserChannel) error {
	end := h.chans.beginWrite(uc.UserID)
	err := h.st.DeleteUserChannel(ctx, uc.ID)
	h.chans.mu.Lock()
	delete(h.chans.owners, uc.ID)
	h.chans.mu.Unlock()
	end()
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// errSkipWrite, returned by an update function, leaves the record as it is.
var errSkipWrite = errors.New("host: user channel left unchanged")

// updateUserChannel reads the record ucID fresh from the store, lets fn
// change it and writes it back, all under the record's lock, so that
// concurrent writers of the host never lose each other's changes. fn
// returning errSkipWrite leaves the record unchanged (and is not an error);
// other errors are returned as they are. It returns the record as written.
func (h *Host) updateUserChannel(ctx context.Context, ucID string, fn func(*store.UserChannel) error) (store.UserChannel, error) {
	return h.updateListedChannel(ctx, listedChannel{uc: store.UserChannel{ID: ucID}}, fn)
}

// listedChannel is a record read from the store after
// channelCache.writeMark returned mark (and true when ok).
type listedChannel struct {
	uc   store.UserChannel
	mark uint64
	ok   bool
}

// updateListedChannel is updateUserChannel for the record l.uc.ID that
// starts from l.uc instead of reading the store when no user channel write
// started since l was listed (a reopen after a reconnect, where nothing
// else writes, reads the records once for all channels).
func (h *Host) updateListedChannel(ctx context.Context, l listedChannel, fn func(*store.UserChannel) error) (store.UserChannel, error) {
	unlock := h.chans.lockRecord(l.uc.ID)
	defer unlock()
	uc := l.uc
	if !l.ok || !h.chans.unwrittenSince(l.mark) {
		var err error
		if uc, err = h.st.GetUserChannel(ctx, l.uc.ID); err != nil {
			return store.UserChannel{}, err
		}
	}
	if err := fn(&uc); err != nil {
		if errors.Is(err, errSkipWrite) {
			return uc, nil
		}
		return store.UserChannel{}, err
	}
	if err := h.putUserChannel(ctx, uc); err != nil {
		return store.UserChannel{}, err
	}
	return uc, nil
}
