package delivery

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// DefaultMemoryMaxChannels bounds the channels a [MemoryStorage] holds per
// queue (pending entries, outcomes and inbox records each).
const DefaultMemoryMaxChannels = 100000

// ErrStorageFull is returned by [MemoryStorage] when a new channel would
// exceed its channel bound.
var ErrStorageFull = errors.New("delivery: memory storage full")

type memKey struct{ queue, channel string }

// MemoryStorage is a bounded in-memory [Storage] for tests and ephemeral
// use: nothing survives the process. Pending entries are bounded by the
// outbox capacity per channel, outcomes by OutboxPruneOutcomes (and by
// 100 per channel between prunes), inbox records by their per-channel
// maximum, and channels by MaxChannels. It is safe for concurrent use.
type MemoryStorage struct {
	maxChannels int

	mu       sync.Mutex
	seq      int64
	pending  map[memKey][]Entry   // ordered by Seq
	outcomes map[memKey][]Outcome // ordered by At
	inbox    map[memKey][]InboxRecord
}

// memOutcomesPerChannel bounds the outcomes kept per channel between prunes.
const memOutcomesPerChannel = 100

// NewMemoryStorage returns an empty MemoryStorage holding at most
// maxChannels channels per map (0 means DefaultMemoryMaxChannels).
func NewMemoryStorage(maxChannels int) *MemoryStorage {
	if maxChannels <= 0 {
		maxChannels = DefaultMemoryMaxChannels
	}
	return &MemoryStorage{maxChannels: maxChannels, pending: map[memKey][]Entry{},
		outcomes: map[memKey][]Outcome{}, inbox: map[memKey][]InboxRecord{}}
}

func (m *MemoryStorage) record(o Outcome) {
	k := memKey{o.Queue, o.Channel}
	list := slices.DeleteFunc(m.outcomes[k], func(x Outcome) bool { return x.MessageID == o.MessageID })
	list = append(list, o)
	if len(list) > memOutcomesPerChannel {
		list = slices.Delete(list, 0, len(list)-memOutcomesPerChannel)
	}
	m.outcomes[k] = list
}

func (m *MemoryStorage) findOutcome(queue, channel, id string) (Outcome, bool) {
	for _, o := range m.outcomes[memKey{queue, channel}] {
		if o.MessageID == id {
			return o, true
		}
	}
	return Outcome{}, false
}

// OutboxEnqueue implements [OutboxStorage].
func (m *MemoryStorage) OutboxEnqueue(_ context.Context, e Entry, capacity int, now time.Time) (EnqueueResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{e.Queue, e.Channel}
	list := m.pending[k]
	for _, p := range list {
		if p.MessageID == e.MessageID {
			return EnqueueResult{Status: AlreadyPending, Entry: p}, nil
		}
	}
	if o, ok := m.findOutcome(e.Queue, e.Channel, e.MessageID); ok {
		return EnqueueResult{Status: AlreadyDone, Outcome: o}, nil
	}
	if list == nil && len(m.pending) >= m.maxChannels {
		return EnqueueResult{}, ErrStorageFull
	}
	var res EnqueueResult
	kept := list[:0:0]
	for _, p := range list {
		if !now.Before(p.ExpiresAt) {
			o := outcomeOf(p, OutcomeExpired, "", "expired before delivery", now)
			m.record(o)
			res.Dropped = append(res.Dropped, o)
			continue
		}
		kept = append(kept, p)
	}
	for capacity > 0 && len(kept) >= capacity {
		o := outcomeOf(kept[0], OutcomeEvicted, CodeCapacityExceeded, "channel outbox full", now)
		m.record(o)
		res.Dropped = append(res.Dropped, o)
		kept = kept[1:]
	}
	m.seq++
	e.Seq = m.seq
	res.Head = len(kept) == 0
	m.pending[k] = append(kept, e)
	res.Status, res.Entry = Enqueued, e
	return res, nil
}

func outcomeOf(e Entry, kind OutcomeKind, code protocol.Code, msg string, now time.Time) Outcome {
	return Outcome{Queue: e.Queue, Channel: e.Channel, MessageID: e.MessageID, Kind: kind, Code: code,
		Message: msg, Attempts: e.Attempts, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, At: now}
}

// OutboxDue implements [OutboxStorage].
func (m *MemoryStorage) OutboxDue(_ context.Context, queue string, now time.Time, limit int) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var heads []Entry
	for k, list := range m.pending {
		if k.queue == queue && len(list) > 0 && !list[0].NextAttempt.After(now) {
			heads = append(heads, list[0])
		}
	}
	sort.Slice(heads, func(i, j int) bool {
		if !heads[i].NextAttempt.Equal(heads[j].NextAttempt) {
			return heads[i].NextAttempt.Before(heads[j].NextAttempt)
		}
		return heads[i].Seq < heads[j].Seq
	})
	if len(heads) > limit {
		heads = heads[:max(limit, 0)]
	}
	return heads, nil
}

// OutboxHead implements [OutboxHeadStorage].
func (m *MemoryStorage) OutboxHead(_ context.Context, queue, channel string) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.pending[memKey{queue, channel}]
	if len(list) == 0 {
		return Entry{}, false, nil
	}
	return list[0], true, nil
}

// OutboxAfter implements [OutboxAfterStorage].
func (m *MemoryStorage) OutboxAfter(_ context.Context, queue, channel string, seq int64) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.pending[memKey{queue, channel}] { // ordered by Seq
		if e.Seq > seq {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// OutboxNextAttempt implements [OutboxStorage].
func (m *MemoryStorage) OutboxNextAttempt(_ context.Context, queue string, after time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best time.Time
	ok := false
	for k, list := range m.pending {
		if k.queue != queue || len(list) == 0 || !list[0].NextAttempt.After(after) {
			continue
		}
		if !ok || list[0].NextAttempt.Before(best) {
			best, ok = list[0].NextAttempt, true
		}
	}
	return best, ok, nil
}

func (m *MemoryStorage) index(queue, channel, id string) int {
	return slices.IndexFunc(m.pending[memKey{queue, channel}], func(e Entry) bool { return e.MessageID == id })
}

// OutboxRetry implements [OutboxStorage].
func (m *MemoryStorage) OutboxRetry(_ context.Context, queue, channel, id string, attempts int, next time.Time, lastErr string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.index(queue, channel, id)
	if i < 0 {
		return false, nil
	}
	e := &m.pending[memKey{queue, channel}][i]
	e.Attempts, e.NextAttempt, e.LastError = attempts, next, lastErr
	return true, nil
}

// OutboxReschedule implements [OutboxStorage].
func (m *MemoryStorage) OutboxReschedule(_ context.Context, queue, channel string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, e := range m.pending[memKey{queue, channel}] {
		if e.NextAttempt.After(at) {
			m.pending[memKey{queue, channel}][i].NextAttempt = at
		}
	}
	return nil
}

func (m *MemoryStorage) remove(queue, channel string, i int) {
	k := memKey{queue, channel}
	list := slices.Delete(m.pending[k], i, i+1)
	if len(list) == 0 {
		delete(m.pending, k)
		return
	}
	m.pending[k] = list
}

// OutboxFinish implements [OutboxStorage].
func (m *MemoryStorage) OutboxFinish(_ context.Context, o Outcome) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.index(o.Queue, o.Channel, o.MessageID)
	if i < 0 {
		return false, nil
	}
	m.remove(o.Queue, o.Channel, i)
	m.record(o)
	return true, nil
}

// OutboxAmendExpired implements [OutboxAmendStorage].
func (m *MemoryStorage) OutboxAmendExpired(_ context.Context, o Outcome) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.index(o.Queue, o.Channel, o.MessageID) >= 0 {
		return false, nil
	}
	if prev, ok := m.findOutcome(o.Queue, o.Channel, o.MessageID); !ok || prev.Kind != OutcomeExpired {
		return false, nil
	}
	m.record(o)
	return true, nil
}

// OutboxFinishNext implements [OutboxFinishNextStorage].
func (m *MemoryStorage) OutboxFinishNext(_ context.Context, o Outcome) (bool, Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.index(o.Queue, o.Channel, o.MessageID)
	if i < 0 {
		return false, Entry{}, false, nil
	}
	m.remove(o.Queue, o.Channel, i)
	m.record(o)
	if list := m.pending[memKey{o.Queue, o.Channel}]; len(list) > 0 {
		return true, list[0], true, nil
	}
	return true, Entry{}, false, nil
}

// OutboxExpire implements [OutboxStorage]: the soonest expiries first.
func (m *MemoryStorage) OutboxExpire(_ context.Context, queue string, now time.Time, limit int) ([]Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []Entry
	for k, list := range m.pending {
		if k.queue != queue {
			continue
		}
		for _, e := range list {
			if !now.Before(e.ExpiresAt) {
				due = append(due, e)
			}
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].ExpiresAt.Equal(due[j].ExpiresAt) {
			return due[i].ExpiresAt.Before(due[j].ExpiresAt)
		}
		return due[i].Seq < due[j].Seq
	})
	var out []Outcome
	for _, e := range due[:min(len(due), max(limit, 0))] {
		m.remove(e.Queue, e.Channel, m.index(e.Queue, e.Channel, e.MessageID))
		o := outcomeOf(e, OutcomeExpired, "", "expired before delivery", now)
		m.record(o)
		out = append(out, o)
	}
	return out, nil
}

// OutboxPending implements [OutboxStorage].
func (m *MemoryStorage) OutboxPending(_ context.Context, queue string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, list := range m.pending {
		if k.queue == queue {
			n += len(list)
		}
	}
	return n, nil
}

// OutboxOutcome implements [OutboxStorage].
func (m *MemoryStorage) OutboxOutcome(_ context.Context, queue, channel, id string) (Outcome, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.findOutcome(queue, channel, id)
	return o, ok, nil
}

// OutboxOutcomes implements [OutboxStorage].
func (m *MemoryStorage) OutboxOutcomes(_ context.Context, queue, channel string, limit int) ([]Outcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.outcomes[memKey{queue, channel}]
	var out []Outcome
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, list[i])
	}
	return out, nil
}

// OutboxPruneOutcomes implements [OutboxStorage].
func (m *MemoryStorage) OutboxPruneOutcomes(_ context.Context, queue string, before time.Time, maxKeep int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	var all []Outcome
	for k, list := range m.outcomes {
		if k.queue != queue {
			continue
		}
		kept := slices.DeleteFunc(list, func(o Outcome) bool { return o.At.Before(before) })
		n += len(list) - len(kept)
		if len(kept) == 0 {
			delete(m.outcomes, k)
			continue
		}
		m.outcomes[k] = kept
		all = append(all, kept...)
	}
	if len(all) > maxKeep {
		sort.Slice(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
		cut := all[len(all)-maxKeep].At // keep outcomes at or after cut
		for k, list := range m.outcomes {
			if k.queue != queue {
				continue
			}
			kept := slices.DeleteFunc(list, func(o Outcome) bool { return o.At.Before(cut) })
			n += len(list) - len(kept)
			if len(kept) == 0 {
				delete(m.outcomes, k)
			} else {
				m.outcomes[k] = kept
			}
		}
	}
	return n, nil
}

// OutboxDeleteChannel implements [OutboxStorage].
func (m *MemoryStorage) OutboxDeleteChannel(_ context.Context, queue, channel string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{queue, channel}
	n := len(m.pending[k])
	delete(m.pending, k)
	delete(m.outcomes, k)
	return n, nil
}

// InboxGet implements [InboxStorage].
func (m *MemoryStorage) InboxGet(_ context.Context, queue, channel, id string) (InboxRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.inbox[memKey{queue, channel}] {
		if r.MessageID == id {
			return r, true, nil
		}
	}
	return InboxRecord{}, false, nil
}

// InboxPut implements [InboxStorage].
func (m *MemoryStorage) InboxPut(_ context.Context, r InboxRecord, maxPerChannel int) (InboxRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{r.Queue, r.Channel}
	list := m.inbox[k]
	for _, x := range list {
		if x.MessageID == r.MessageID {
			return x, false, nil
		}
	}
	if list == nil && len(m.inbox) >= m.maxChannels {
		return InboxRecord{}, false, ErrStorageFull
	}
	list = append(list, r)
	if maxPerChannel > 0 && len(list) > maxPerChannel {
		list = slices.Delete(list, 0, len(list)-maxPerChannel)
	}
	m.inbox[k] = list
	return InboxRecord{}, true, nil
}

// InboxPrune implements [InboxStorage].
func (m *MemoryStorage) InboxPrune(_ context.Context, queue string, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, list := range m.inbox {
		if k.queue != queue {
			continue
		}
		kept := slices.DeleteFunc(list, func(r InboxRecord) bool { return r.At.Before(before) })
		n += len(list) - len(kept)
		if len(kept) == 0 {
			delete(m.inbox, k)
		} else {
			m.inbox[k] = kept
		}
	}
	return n, nil
}

// InboxDeleteChannel implements [InboxStorage].
func (m *MemoryStorage) InboxDeleteChannel(_ context.Context, queue, channel string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{queue, channel}
	n := len(m.inbox[k])
	delete(m.inbox, k)
	return n, nil
}

var (
	_ Storage                 = (*MemoryStorage)(nil)
	_ OutboxHeadStorage       = (*MemoryStorage)(nil)
	_ OutboxFinishNextStorage = (*MemoryStorage)(nil)
	_ OutboxAfterStorage      = (*MemoryStorage)(nil)
)
