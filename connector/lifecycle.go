package connector

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/delivery"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand documents it)
	return k
}

// Start builds and validates the final Card (an invalid one fails with
// every violation), restores channels and leases from the store and starts
// the background work (outbox delivery, lease timers, sweeper). ctx bounds
// the start itself; the server runs until Close.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	if s.state != stateNew {
		s.mu.Unlock()
		return errors.New("connector: Start called twice or after Close")
	}
	if err := errors.Join(s.regErrs...); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("connector: registration: %w", err)
	}
	if err := s.lockDataDir(); err != nil { // one process per DataDir
		s.mu.Unlock()
		return err
	}
	defer func() {
		if err != nil {
			s.unlockDataDir()
		}
	}()
	if err := s.openDefaultStore(ctx); err != nil {
		s.mu.Unlock()
		return err
	}
	card, validators, err := s.buildCard()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.card, s.validators = card, validators
	s.mu.Unlock()

	if s.cardJSON, err = json.Marshal(card); err != nil {
		return fmt.Errorf("connector: encode Card: %w", err)
	}
	build := card.Build
	if s.healthJSON, err = json.Marshal(protocol.HealthResponse{Status: "ok", ConnectorCardID: card.ConnectorCardID,
		ConnectorCardVersion: card.Connector.Version, ProtocolVersion: card.ProtocolVersion, Build: &build}); err != nil {
		return fmt.Errorf("connector: encode health: %w", err)
	}
	if err := s.prepareFiles(); err != nil {
		return err
	}
	if err := s.prepareDelivery(); err != nil {
		return err
	}
	if err := s.metrics.reg.Register(newDeliveryCollector(s)); err != nil {
		return fmt.Errorf("connector: metrics: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	bound, err := s.restore(ctx)
	if err != nil {
		s.cancel()
		s.closeOwnStore()
		return err
	}
	s.mu.Lock()
	s.state = stateStarted
	s.mu.Unlock()
	s.wg.Go(s.janitor)
	for _, ob := range []*delivery.Outbox{s.outbox, s.outv1} {
		s.wg.Go(func() {
			if err := ob.Run(s.ctx); err != nil && s.ctx.Err() == nil {
				s.log.Error("connector: outbox stopped", "queue", ob.Queue(), "err", err)
			}
		})
	}
	s.restoreAttachments(ctx, bound)
	s.log.Info("connector: started", "card", card.ConnectorCardID, "tools", len(card.Tools))
	return nil
}

func (s *Server) prepareFiles() error {
	dir := s.opts.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "xconn-files-")
		if err != nil {
			return fmt.Errorf("connector: file cache: %w", err)
		}
		dir = d
		s.ownDir = true
	} else {
		dir = filepath.Join(dir, "files")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("connector: file cache: %w", err)
	}
	s.dataDir = dir
	return nil
}

func (s *Server) prepareDelivery() error {
	st := s.opts.Delivery
	if st == nil {
		if ds, ok := s.opts.Store.(delivery.Storage); ok {
			st = ds
		} else {
			st = delivery.NewMemoryStorage(0)
		}
	}
	s.dstore = st
	var err error
	if s.outbox, err = delivery.NewOutbox(delivery.OutboxOptions{Storage: st, Queue: queueIMv2, Send: s.trackSend(deferIMv2, s.sendChat),
		TTL: s.opts.OutboxTTL, Capacity: s.opts.OutboxCapacity, AttemptTimeout: s.opts.AckTimeout + 5*time.Second,
		HistoryAge: s.opts.DedupeWindow, HistoryMax: s.opts.DedupeHistory}); err != nil {
		return fmt.Errorf("connector: outbox: %w", err)
	}
	if s.outv1, err = delivery.NewOutbox(delivery.OutboxOptions{Storage: st, Queue: queueIMv1, Send: s.trackSend(deferIMv1, s.sendPush),
		TTL: s.opts.OutboxTTL, Capacity: s.opts.OutboxCapacity, AttemptTimeout: s.opts.AckTimeout + 5*time.Second,
		HistoryAge: s.opts.DedupeWindow, HistoryMax: s.opts.DedupeHistory}); err != nil {
		return fmt.Errorf("connector: outbox: %w", err)
	}
	if s.inbox, err = delivery.NewInbox(delivery.InboxOptions{Storage: st, Queue: "connector.inbox"}); err != nil {
		return fmt.Errorf("connector: inbox: %w", err)
	}
	s.asm = delivery.NewAssembler(delivery.AssemblerOptions{})
	return nil
}

type boundChannel struct {
	id      string
	binding Binding
	rec     []byte // the encoded binding, to notice a replacement
	// prev is the stored status of a channel reported offline until its
	// client exists.
	prev protocol.ConnectionStatus
}

// restore loads instances and channels; every instance (and every channel
// whose instance is gone) gets a lease deadline, so that channels nobody
// says hello for within the grace period are cleaned up.
func (s *Server) restore(ctx context.Context) ([]boundChannel, error) {
	cardID := s.card.ConnectorCardID
	ins, err := s.opts.Store.ListInstances(ctx, cardID)
	if err != nil {
		return nil, fmt.Errorf("connector: restore instances: %w", err)
	}
	chans, err := s.opts.Store.ListChannels(ctx, cardID, "")
	if err != nil {
		return nil, fmt.Errorf("connector: restore channels: %w", err)
	}
	var deferred uint8
	if !s.outboxesEmpty(ctx) {
		deferred = deferRestored
	}
	now := s.now()
	var bound []boundChannel
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range ins {
		until := in.GraceUntil
		if until.IsZero() {
			until = now.Add(s.opts.LeaseGrace)
		}
		s.leases[in.ConnectorID] = &lease{until: until}
	}
	for _, rec := range chans {
		b, err := decodeBinding(rec)
		if err != nil {
			s.log.Warn("connector: restore binding", "channel", rec.ChannelID, "err", err)
		}
		s.secrets.Add(b.Secrets...)
		// Entries of a previous run may wait for a later attempt: then
		// the first open resumes delivery.
		bc := boundChannel{id: rec.ChannelID, binding: b, rec: rec.Binding, prev: rec.Status}
		if s.typed.newClient != nil && isAuthenticated(rec.Status) && rec.Status != protocol.StatusOffline {
			// Not connected before the client has checked the target.
			rec.Status = protocol.StatusOffline
		}
		s.channels[rec.ChannelID] = &chanState{rec: rec, binding: b, deferred: deferred}
		if _, ok := s.leases[rec.ConnectorID]; !ok {
			s.leases[rec.ConnectorID] = &lease{until: now.Add(s.opts.LeaseGrace)}
		}
		if isAuthenticated(rec.Status) {
			bound = append(bound, bc)
		}
	}
	return bound, nil
}

// Close stops accepting, closes every socket with 1001 after draining its
// writer, stops the background work and waits for every goroutine, bounded
// by ctx and Options.CloseTimeout. Leases keep their grace deadline in the
// store for the next start. Close is idempotent.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.state != stateStarted {
		s.state = stateClosed
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	socks := make([]*session, 0, len(s.sockets))
	for sess := range s.sockets {
		socks = append(socks, sess)
	}
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, s.opts.CloseTimeout)
	defer cancel()
	// The connector's own streams first, then its consumers (nothing new
	// is published), then the sockets.
	var errs []error
	for _, f := range s.typed.onClose {
		if err := safeCall(func() error { return f(ctx) }); err != nil {
			errs = append(errs, err)
		}
	}
	for _, reg := range s.typed.consumers {
		reg.shared.Close()
	}
	for _, sess := range socks {
		_ = sess.conn.Close(websocket.StatusGoingAway, "server shutting down")
	}
	for _, sess := range socks {
		select {
		case <-sess.conn.Done():
		case <-ctx.Done():
		}
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		<-done // goroutines end promptly once cancelled; never leave them behind
		errs = append(errs, fmt.Errorf("connector: close: %w", ctx.Err()))
	}
	s.closeClients(ctx)
	s.removeOwnDir()
	s.closeOwnStore()
	s.unlockDataDir()
	s.log.Info("connector: closed")
	return errors.Join(errs...)
}

// closeClients closes every channel client (the consumers are already
// stopped).
func (s *Server) closeClients(ctx context.Context) {
	s.mu.Lock()
	atts := s.attached
	s.attached = map[string]*attachment{}
	s.mu.Unlock()
	for id, a := range atts {
		s.closeClient(ctx, id, a.client)
	}
}

// removeOwnDir deletes the file cache Start created under os.TempDir.
func (s *Server) removeOwnDir() {
	if s.ownDir {
		if err := os.RemoveAll(s.dataDir); err != nil {
			s.log.Warn("connector: remove file cache", "err", err)
		}
	}
}

// DefaultStoreFile is the SQLite file that Start opens in Options.DataDir
// when Options.Store is nil; DefaultSigningKeyFile holds the signing key
// made there when Options.SigningKey is nil (mode 0600, so download URLs
// and QR tokens survive a restart).
const (
	DefaultStoreFile      = "connector.db"
	DefaultSigningKeyFile = "signing.key"
)

// openDefaultStore opens Options.StoreDSN (default SQLite in DataDir) when
// Options.Store is nil. The caller holds s.mu.
func (s *Server) openDefaultStore(ctx context.Context) error {
	if s.opts.Store != nil {
		return nil
	}
	if err := os.MkdirAll(s.opts.DataDir, 0o700); err != nil {
		return fmt.Errorf("connector: data directory: %w", err)
	}
	dsn := s.opts.StoreDSN
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(s.opts.DataDir, DefaultStoreFile)
	}
	db, err := store.Open(ctx, dsn, store.Options{DataDir: s.opts.DataDir})
	if err != nil {
		return fmt.Errorf("connector: open the store (data directory %s): %w", s.opts.DataDir, err)
	}
	s.opts.Store, s.ownStore = db, db
	return nil
}

func (s *Server) closeOwnStore() {
	if s.ownStore != nil {
		if err := s.ownStore.Close(); err != nil {
			s.log.Warn("connector: close store", "err", err)
		}
		s.ownStore = nil
	}
}

// loadOrCreateKey reads a 32-byte key file, creating it (mode 0600) with
// random bytes when it does not exist.
func loadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("key file %s: want 32 bytes, found %d", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	b = randomKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadOrCreateKey(path) // another process made it first
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	return b, nil
}
