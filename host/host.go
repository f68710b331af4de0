package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Host is the xAgent side of the protocol, embedded in an agent platform.
// It owns the catalog of admitted connectors, their health monitors and
// data-plane clients (one per connector_card_id), the users' channels and
// sign-ins, tool projection and invocation, and the IM v2 virtual message
// channel that feeds an [Agent].
//
// Create it with [New], call [Host.Start], then [Host.Admit] connectors;
// [Host.Close] stops every goroutine the host started and waits for them.
// A Host is safe for concurrent use.
type Host struct {
	opts     Options
	log      *slog.Logger
	st       store.HostStore
	chans    *channelCache // user channels; every write of one invalidates its user
	outbox   *delivery.Outbox
	inbox    *delivery.Inbox
	filesDir string
	tempDir  bool
	files    *fileRegistry  // unified file_refs of the users' files
	dl       *downloader    // fetches download_urls (origins and address guard)
	tracer   *xtrace.Tracer // nil: tracing off (tracing.go)
	links    *xtrace.Links  // trace context of queued finals until sent

	admitMu sync.Mutex // serialises admissions (one connector per card id)

	lastPrune atomic.Int64 // unix nanos of the last FilesDir prune

	mu      sync.Mutex
	signins int // running sign-ins, bounded by MaxSignins
	state   int // stateNew, stateStarted, stateClosed
	conns   map[string]*runtime
	// sorted is conns by card id, rebuilt when conns changes; shared by
	// readers, never modified in place.
	sorted []*runtime
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const (
	stateNew = iota
	stateStarted
	stateClosed
)

// New checks opts and returns a Host that has not started yet.
func New(opts Options) (*Host, error) {
	if opts.Store == nil {
		return nil, errors.New("host: Options.Store is required")
	}
	opts = opts.withDefaults()
	downloads, err := newDownloader(opts)
	if err != nil {
		return nil, err
	}
	h := &Host{opts: opts, log: opts.Logger, st: opts.Store, conns: map[string]*runtime{}, dl: downloads}
	h.files = newFileRegistry(opts.MaxFileRefs, opts.MaxFileRefBytes)
	if h.tracer = xtrace.New(opts.TracerProvider); h.tracer != nil {
		h.links = xtrace.NewLinks(0)
	}
	h.chans = newChannelCache(opts.Store, opts.MaxCachedChannels)
	dl := opts.Delivery
	if dl == nil {
		dl = delivery.NewMemoryStorage(0)
	}
	ob := opts.Outbox
	ob.Storage = dl
	ob.Send = h.sendFinal
	userOutcome := ob.OnOutcome
	ob.OnOutcome = func(o delivery.Outcome) {
		h.emit(Event{Kind: EventDelivery, UserChannelID: o.Channel, Detail: fmt.Sprintf("%s %s %s", o.MessageID, o.Kind, o.Code)})
		if userOutcome != nil {
			userOutcome(o)
		}
	}
	if h.outbox, err = delivery.NewOutbox(ob); err != nil {
		return nil, fmt.Errorf("host: outbox: %w", err)
	}
	if h.inbox, err = delivery.NewInbox(delivery.InboxOptions{Storage: dl, Queue: opts.Outbox.Queue + ".inbox"}); err != nil {
		return nil, fmt.Errorf("host: inbox: %w", err)
	}
	h.filesDir = opts.FilesDir
	return h, nil
}

// Start loads the catalog from the store and starts, for every admitted
// connector, its health monitor and data-plane client, plus the outbox of
// assistant finals. The goroutines live until [Host.Close]; ctx only bounds
// the loading (its values are kept).
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	if h.state != stateNew {
		h.mu.Unlock()
		return errors.New("host: Start called twice or after Close")
	}
	if h.filesDir == "" {
		dir, err := os.MkdirTemp("", "xconn-host-files-")
		if err != nil {
			h.mu.Unlock()
			return fmt.Errorf("host: files dir: %w", err)
		}
		h.filesDir, h.tempDir = dir, true
	} else if err := os.MkdirAll(h.filesDir, 0o700); err != nil {
		h.mu.Unlock()
		return fmt.Errorf("host: files dir: %w", err)
	}
	h.ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.state = stateStarted
	h.mu.Unlock()

	entries, err := h.st.ListCatalog(ctx)
	if err != nil {
		return fmt.Errorf("host: load catalog: %w", err)
	}
	for _, e := range entries {
		h.secret(e.APIKey)
		card, err := protocol.ParseCard(e.Card)
		if err != nil {
			h.log.Warn("host: stored card does not parse; connector skipped", "card_id", e.CardID, "err", err)
			continue
		}
		if _, err := h.startRuntime(e, card); err != nil {
			return err
		}
	}
	// The outbox starts once every stored connector has its runtime: a
	// pending final due at start must find its connector, not be failed
	// as if the connector had been removed.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateStarted {
		return errors.New("host: closed while starting")
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_ = h.outbox.Run(h.ctx)
	}()
	return nil
}

// Close stops every health monitor, data-plane client, sign-in and worker
// and waits for them (or for ctx). It closes the sockets with a normal
// closure; pending finals stay in the outbox for the next start. Calling it
// more than once is safe.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.state == stateClosed {
		h.mu.Unlock()
		return nil
	}
	started := h.state == stateStarted
	h.state = stateClosed
	if h.cancel != nil {
		h.cancel()
	}
	h.mu.Unlock()
	if !started {
		return nil
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("host: close: %w", ctx.Err())
	}
	if h.tempDir {
		_ = os.RemoveAll(h.filesDir)
	}
	return nil
}

// Connector returns a snapshot of the admitted connector cardID.
func (h *Host) Connector(cardID string) (*Connector, bool) {
	rt := h.runtime(cardID)
	if rt == nil {
		return nil, false
	}
	return rt.snapshot(), true
}

// Connectors returns snapshots of every admitted connector, by card id.
func (h *Host) Connectors() []*Connector {
	h.mu.Lock()
	ids := make([]string, 0, len(h.conns))
	for id := range h.conns {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	slices.Sort(ids)
	out := make([]*Connector, 0, len(ids))
	for _, id := range ids {
		if c, ok := h.Connector(id); ok {
			out = append(out, c)
		}
	}
	return out
}

// Recover restarts the data-plane client of cardID after it stopped
// reconnecting (LinkStopped), and resets its failure count.
func (h *Host) Recover(cardID string) error {
	rt := h.runtime(cardID)
	if rt == nil {
		return fmt.Errorf("host: recover %s: %w", cardID, ErrUnknownConnector)
	}
	rt.recover()
	return nil
}

// Remove stops the connector cardID and deletes it from the catalog with its
// user channels and their pending finals.
func (h *Host) Remove(ctx context.Context, cardID string) error {
	h.admitMu.Lock()
	defer h.admitMu.Unlock()
	h.mu.Lock()
	rt := h.conns[cardID]
	delete(h.conns, cardID)
	h.sortRuntimesLocked()
	h.mu.Unlock()
	if rt != nil {
		rt.stop()
	}
	ucs, err := h.st.ListUserChannels(ctx, "", cardID)
	if err != nil {
		return fmt.Errorf("host: remove %s: %w", cardID, err)
	}
	defer h.chans.invalidateAll()
	for _, uc := range ucs {
		if err := h.forgetChannel(ctx, uc); err != nil {
			return fmt.Errorf("host: remove %s: %w", cardID, err)
		}
	}
	if err := h.st.DeleteCatalog(ctx, cardID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("host: remove %s: %w", cardID, err)
	}
	return nil
}

// OutboxStats returns the counters of the outbox of assistant finals.
func (h *Host) OutboxStats(ctx context.Context) (delivery.Stats, error) {
	return h.outbox.Stats(ctx)
}

// FinalOutcome returns the terminal outcome of an assistant final sent on a
// user channel; ok is false while it is pending (or unknown).
func (h *Host) FinalOutcome(ctx context.Context, userChannelID, messageID string) (delivery.Outcome, bool, error) {
	return h.outbox.Outcome(ctx, userChannelID, messageID)
}

func (h *Host) runtime(cardID string) *runtime {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[cardID]
}

// runtimes returns the admitted connectors' runtimes by card id. The slice
// is shared: callers must not modify it.
func (h *Host) runtimes() []*runtime {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sorted
}

// sortRuntimesLocked rebuilds h.sorted from h.conns; h.mu is held.
func (h *Host) sortRuntimesLocked() {
	out := make([]*runtime, 0, len(h.conns))
	for _, rt := range h.conns {
		out = append(out, rt)
	}
	slices.SortFunc(out, func(a, b *runtime) int { return strings.Compare(a.cardID, b.cardID) })
	h.sorted = out
}

// startRuntime creates and starts the runtime of an entry; the host must be
// started.
func (h *Host) startRuntime(e store.CatalogEntry, card *protocol.Card) (*runtime, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state {
	case stateNew:
		return nil, ErrNotStarted
	case stateClosed:
		return nil, ErrClosed
	}
	if old := h.conns[e.CardID]; old != nil {
		old.update(e, card)
		return old, nil
	}
	rt := newRuntime(h, e, card)
	h.conns[e.CardID] = rt
	h.sortRuntimesLocked()
	rt.start(h.ctx, &h.wg)
	return rt, nil
}

// secret reports secret values to Options.OnSecret.
func (h *Host) secret(values ...string) {
	if h.opts.OnSecret == nil {
		return
	}
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	if len(out) > 0 {
		h.opts.OnSecret(out...)
	}
}

func (h *Host) emit(ev Event) {
	if h.opts.OnEvent == nil {
		return
	}
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	h.opts.OnEvent(ev)
}

func (h *Host) observe(dir protocol.Direction, cardID string, env *protocol.Envelope) {
	if h.opts.OnPacket != nil {
		h.opts.OnPacket(dir, cardID, env)
	}
}

// forgetChannel drops a user channel record with its delivery state.
func (h *Host) forgetChannel(ctx context.Context, uc store.UserChannel) error {
	if _, err := h.outbox.DeleteChannel(ctx, uc.ID); err != nil {
		return err
	}
	if _, err := h.inbox.DeleteChannel(ctx, uc.ID); err != nil {
		return err
	}
	unlock := h.chans.lockRecord(uc.ID)
	defer unlock()
	return h.deleteUserChannel(ctx, uc)
}
