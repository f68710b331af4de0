package connector_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xconn/xconn/connector"
)

// memLeases is a LeaseStore on the (fake) clock, with holders that can be
// cut off from the store.
type memLeases struct {
	mu      sync.Mutex
	holder  map[string]string
	expires map[string]time.Time
	cut     map[string]bool
}

func newMemLeases() *memLeases {
	return &memLeases{holder: map[string]string{}, expires: map[string]time.Time{}, cut: map[string]bool{}}
}

var errCut = errors.New("store unreachable")

func (m *memLeases) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cut[holder] {
		return false, errCut
	}
	now := time.Now()
	if h, ok := m.holder[name]; ok && h != holder && now.Before(m.expires[name]) {
		return false, nil
	}
	m.holder[name], m.expires[name] = holder, now.Add(ttl)
	return true, nil
}

func (m *memLeases) ReleaseLease(_ context.Context, name, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cut[holder] {
		return errCut
	}
	if m.holder[name] == holder {
		delete(m.holder, name)
	}
	return nil
}

func (m *memLeases) setCut(holder string, cut bool) {
	m.mu.Lock()
	m.cut[holder] = cut
	m.mu.Unlock()
}

func TestActiveLeaseStandbyTakesOverWithinBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 8 * time.Second
		st := newMemLeases()
		ctx := context.Background()
		a, err := connector.WaitActive(ctx, st, "webchat", "A", ttl)
		if err != nil {
			t.Fatal(err)
		}
		var b *connector.ActiveLease
		bDone := make(chan time.Time, 1)
		go func() {
			var err error
			b, err = connector.WaitActive(ctx, st, "webchat", "B", ttl)
			if err != nil {
				t.Error(err)
			}
			bDone <- time.Now()
		}()
		// A renews: B stays a standby for many lease lifetimes.
		time.Sleep(5 * ttl)
		synctest.Wait()
		select {
		case <-bDone:
			t.Fatal("standby took a renewed lease")
		case <-a.Lost():
			t.Fatal("renewed lease reported lost")
		default:
		}
		// A is cut off from the store (as dead for the others): it must
		// report Lost before B holds the lease, and B must hold it within
		// 1.25×ttl (+ one poll) of A's last renewal.
		cutAt := time.Now()
		st.setCut("A", true)
		var lostAt time.Time
		select {
		case <-a.Lost():
			lostAt = time.Now()
		case <-time.After(2 * ttl):
			t.Fatal("A never reported Lost")
		}
		took := <-bDone
		if !lostAt.Before(took) {
			t.Fatalf("A lost its lease at %v, B took it at %v: both active", lostAt.Sub(cutAt), took.Sub(cutAt))
		}
		if d := took.Sub(cutAt); d > ttl+ttl/4 {
			t.Fatalf("takeover after %v, bound %v", d, ttl+ttl/4)
		}
		if err := a.Release(ctx); err == nil {
			t.Fatal("release through a cut store succeeded")
		}
		// A clean release hands over within one poll.
		c := make(chan time.Time, 1)
		var lc *connector.ActiveLease
		go func() {
			var err error
			if lc, err = connector.WaitActive(ctx, st, "webchat", "C", ttl); err != nil {
				t.Error(err)
			}
			c <- time.Now()
		}()
		time.Sleep(ttl)
		released := time.Now()
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.Release(ctx); err != nil {
			t.Fatalf("second release: %v", err)
		}
		if d := (<-c).Sub(released); d > ttl/4 {
			t.Fatalf("handover after release took %v", d)
		}
		st.mu.Lock()
		holder := st.holder["webchat"]
		st.mu.Unlock()
		if holder != "C" {
			t.Fatalf("holder %q", holder)
		}
		if err := lc.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestActiveLeaseWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newMemLeases()
		a, err := connector.WaitActive(context.Background(), st, "x", "A", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, err := connector.WaitActive(ctx, st, "x", "B", time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		if _, err := connector.WaitActive(ctx, nil, "x", "B", time.Second); err == nil {
			t.Fatal("nil store accepted")
		}
	})
}
