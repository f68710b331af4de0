package connector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultActiveLeaseTTL is the lifetime of an active lease that is not
// renewed; see [WaitActive] for the takeover bound it gives.
const DefaultActiveLeaseTTL = 10 * time.Second

// LeaseStore arbitrates named leases between processes sharing one store.
// *store.DB implements it (with one statement per acquisition, so two
// holders never both hold a name).
type LeaseStore interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// ActiveLease makes one of several connector processes on one shared store
// (PostgreSQL) the active one: only the holder serves; the others are hot
// standbys blocked in [WaitActive]. It is returned held; a goroutine it
// owns renews it until Release. Safe for concurrent use.
type ActiveLease struct {
	st           LeaseStore
	name, holder string
	ttl          time.Duration

	lost     chan struct{} // closed when the lease can no longer be trusted
	stop     chan struct{} // closed by Release
	stopOnce sync.Once
	done     chan struct{} // closed when the renewal goroutine returns
}

// WaitActive blocks until holder holds the lease name, trying every ttl/4,
// then returns it held and renews it every ttl/4 until Release. ttl <= 0
// means [DefaultActiveLeaseTTL]. It returns ctx's error when ctx ends first.
//
// Takeover bound: when the active process dies without releasing, its last
// renewal was at most ttl/4 before, so the lease expires at most ttl after
// the death and a standby holds it at most ttl/4 later: within 1.25×ttl of
// the death (plus one store round trip and the clock skew between the
// processes' hosts, since expiry uses each process's clock), after which
// the standby starts its connector. A clean shutdown releases the lease,
// and a standby takes over within ttl/4.
//
// Fencing: when renewals fail (the store is unreachable) for 0.75×ttl
// after the last success, Lost is closed before the lease can expire; the
// process must stop serving then.
func WaitActive(ctx context.Context, st LeaseStore, name, holder string, ttl time.Duration) (*ActiveLease, error) {
	if st == nil || name == "" || holder == "" {
		return nil, errors.New("connector: active lease: store, name and holder are required")
	}
	if ttl <= 0 {
		ttl = DefaultActiveLeaseTTL
	}
	every := ttl / 4
	for {
		ok, err := st.AcquireLease(ctx, name, holder, ttl)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ok {
			break
		}
		// A store error is retried like a held lease: a standby outlives
		// a store restart.
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("connector: wait for the active lease %q: %w", name, ctx.Err())
		case <-t.C:
		}
	}
	l := &ActiveLease{st: st, name: name, holder: holder, ttl: ttl,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(time.Now())
	return l, nil
}

// renew keeps the lease until Release, or closes lost when it could not
// renew for 0.75×ttl after lastOK.
func (l *ActiveLease) renew(lastOK time.Time) {
	defer close(l.done)
	every := l.ttl / 4
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		ok, err := l.st.AcquireLease(ctx, l.name, l.holder, l.ttl)
		cancel()
		now := time.Now()
		if err == nil && ok {
			lastOK = now
			continue
		}
		if err == nil || now.Sub(lastOK) >= l.ttl-every {
			// Taken by another holder (our lease had expired), or
			// about to expire: stop trusting it.
			close(l.lost)
			return
		}
	}
}

// Name returns the lease's name; Holder the holder id it was taken with.
func (l *ActiveLease) Name() string { return l.name }

// Holder returns the holder id the lease was taken with.
func (l *ActiveLease) Holder() string { return l.holder }

// Lost is closed when the lease can no longer be trusted: the process must
// stop serving (another process may take over).
func (l *ActiveLease) Lost() <-chan struct{} { return l.lost }

// Release stops renewing and gives the lease up so that a standby takes
// over at once. It waits for the renewal goroutine; calling it again
// releases nothing more.
func (l *ActiveLease) Release(ctx context.Context) error {
	first := false
	l.stopOnce.Do(func() { close(l.stop); first = true })
	<-l.done
	if !first {
		return nil
	}
	if err := l.st.ReleaseLease(ctx, l.name, l.holder); err != nil {
		return fmt.Errorf("connector: release the active lease %q: %w", l.name, err)
	}
	return nil
}
