package host

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// runtime is the live state of one admitted connector: its catalog entry,
// health monitor, data-plane link and current session. One per
// connector_card_id.
type runtime struct {
	h      *Host
	cardID string

	mu        sync.Mutex
	entry     store.CatalogEntry
	base      *url.URL
	card      *protocol.Card
	health    HealthState
	hfails    int // consecutive health failures
	link      LinkState
	lfails    int // consecutive link failures
	lastErr   string
	sess      *session
	online    chan struct{} // closed when a session is installed; replaced when it goes
	kick      chan struct{} // capacity 1: re-evaluate the link now
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	startedAt time.Time
	// cats are the channel catalogs of the current Card by Descriptor
	// profile list (for finals queued while offline); reset with the Card.
	cats map[string]*protocol.Negotiated
	// projs are the model projections of the current Card's tools, by
	// tool_id (see projection); reset with the Card.
	projs map[string]toolProjection
	// failedPushes counts the IM v1 message.push packets not handed to the
	// Agent (see pushFailed).
	failedPushes atomic.Int64
}

func newRuntime(h *Host, e store.CatalogEntry, card *protocol.Card) *runtime {
	rt := &runtime{h: h, cardID: e.CardID, health: HealthState(e.Health), link: LinkConnecting,
		online: make(chan struct{}), kick: make(chan struct{}, 1)}
	if rt.health == "" {
		rt.health = HealthUnknown
	}
	rt.setEntry(e, card)
	return rt
}

func (rt *runtime) setEntry(e store.CatalogEntry, card *protocol.Card) {
	base, _ := url.Parse(e.BaseURL) // validated at admission
	if base == nil {
		base = &url.URL{}
	}
	rt.entry, rt.card, rt.base = e, card, base
	rt.cats, rt.projs = nil, nil
}

// catalog returns the channel catalog of a Descriptor's profiles under the
// current Card and the host's supported profiles (the negotiation a
// connector.hello would give, narrowed to them), shared and immutable.
func (rt *runtime) catalog(profiles []protocol.Profile) *protocol.Negotiated {
	key := profileKey(profiles)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if n := rt.cats[key]; n != nil {
		return n
	}
	hello := protocol.Negotiate(rt.card, rt.h.opts.SupportedProfiles)
	n := protocol.NegotiateProfiles(profiles, hello.Profiles())
	if rt.cats == nil {
		rt.cats = map[string]*protocol.Negotiated{}
	}
	if len(rt.cats) < maxSharedCatalogs {
		rt.cats[key] = n
	}
	return n
}

// update replaces the entry and Card after an edit or a refetch.
func (rt *runtime) update(e store.CatalogEntry, card *protocol.Card) {
	rt.mu.Lock()
	keyChanged := rt.entry.APIKey != e.APIKey
	rt.setEntry(e, card)
	rt.mu.Unlock()
	if keyChanged {
		rt.recover()
	}
}

func (rt *runtime) start(ctx context.Context, hwg *sync.WaitGroup) {
	ctx, rt.cancel = context.WithCancel(ctx)
	rt.startedAt = time.Now()
	rt.wg.Add(2)
	hwg.Add(2)
	go func() {
		defer hwg.Done()
		defer rt.wg.Done()
		rt.healthLoop(ctx)
	}()
	go func() {
		defer hwg.Done()
		defer rt.wg.Done()
		rt.linkLoop(ctx)
	}()
}

// stop cancels the runtime's goroutines and waits for them.
func (rt *runtime) stop() {
	rt.cancel()
	rt.wg.Wait()
}

// view returns the Base URL, API key and Card.
func (rt *runtime) view() (*url.URL, string, *protocol.Card) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.base, rt.entry.APIKey, rt.card
}

func (rt *runtime) snapshot() *Connector {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	c := &Connector{CardID: rt.cardID, BaseURL: rt.entry.BaseURL, ConnectorID: rt.entry.ConnectorID,
		Card: rt.card, Skill: rt.entry.Skill, Health: rt.health, Link: rt.link, LastError: rt.lastErr,
		CreatedAt: rt.entry.CreatedAt, UpdatedAt: rt.entry.UpdatedAt, FailedPushes: rt.failedPushes.Load()}
	c.Profiles = protocol.Negotiate(rt.card, rt.h.opts.SupportedProfiles).Profiles()
	return c
}

// session returns the current hello-completed session, or nil.
func (rt *runtime) session() *session {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.sess
}

// waitOnline returns the current session, waiting up to the request timeout
// (or ctx) for one.
func (rt *runtime) waitOnline(ctx context.Context) (*session, error) {
	if s := rt.session(); s != nil {
		return s, nil
	}
	t := time.NewTimer(rt.h.opts.RequestTimeout)
	defer t.Stop()
	for {
		rt.mu.Lock()
		s, online, link := rt.sess, rt.online, rt.link
		rt.mu.Unlock()
		if s != nil {
			return s, nil
		}
		if link == LinkStopped || link == LinkClosed {
			return nil, &protocol.Error{Code: CodeOffline, Message: "connector " + rt.cardID + " is " + string(link), Retryable: true}
		}
		select {
		case <-online:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, &protocol.Error{Code: CodeOffline, Message: "connector " + rt.cardID + " is offline", Retryable: true}
		}
	}
}

func (rt *runtime) wake() {
	select {
	case rt.kick <- struct{}{}:
	default:
	}
}

// recover resets the link failure count and wakes a stopped link.
func (rt *runtime) recover() {
	rt.mu.Lock()
	rt.lfails = 0
	if rt.link == LinkStopped {
		rt.link = LinkBackoff
	}
	rt.mu.Unlock()
	rt.wake()
}

func (rt *runtime) setLink(l LinkState, errMsg string) {
	rt.mu.Lock()
	changed := rt.link != l
	rt.link = l
	if errMsg != "" {
		rt.lastErr = errMsg
	}
	rt.mu.Unlock()
	if changed {
		rt.h.emit(Event{Kind: EventLink, CardID: rt.cardID, Link: l, Detail: errMsg})
	}
}

func (rt *runtime) setHealth(hs HealthState, errMsg string, _ *protocol.HealthResponse) {
	rt.mu.Lock()
	changed := rt.health != hs
	rt.health = hs
	if errMsg != "" {
		rt.lastErr = errMsg
	}
	if hs == HealthOK {
		rt.hfails = 0
	}
	rt.mu.Unlock()
	if changed {
		rt.h.emit(Event{Kind: EventHealth, CardID: rt.cardID, Health: hs, Detail: errMsg})
		if hs == HealthOK {
			rt.wake()
		}
	}
}

// persist writes the runtime's entry (health, connector id, card) back to
// the catalog.
func (rt *runtime) persist(ctx context.Context) {
	rt.mu.Lock()
	e := rt.entry
	e.Health, e.LastError, e.UpdatedAt = string(rt.health), rt.lastErr, time.Now().UTC()
	rt.entry.UpdatedAt = e.UpdatedAt
	rt.mu.Unlock()
	if err := rt.h.st.UpdateCatalog(ctx, e); err != nil && ctx.Err() == nil {
		rt.h.log.Warn("host: persist catalog entry", "card_id", rt.cardID, "err", err)
	}
}
