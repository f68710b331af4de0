package bench

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/protocol"
)

// chatTimeout bounds the wait for the last acks of a chat measurement.
const chatTimeout = 10 * time.Second

// chatLoad is the shape of a chat measurement: channels channels, at most
// window unacked messages on each, and a pause between a channel's ack and
// its next message (the latency rows: a user does not post again within
// microseconds of the previous message's delivery).
type chatLoad struct {
	channels, window int
	pause            time.Duration
}

// chatDriver pushes durable chat messages with a bounded number pending on
// each channel, counts the acks seen by a packet observer and records the
// latency from the send to the receiving handler. Safe for concurrent use
// once bind has returned.
type chatDriver struct {
	ackDir     protocol.Direction
	perChannel int
	pause      time.Duration
	// pending holds a token per message of channel i not yet acked, at
	// most perChannel (set by bind; index is the producer's).
	pending []chan struct{}
	index   map[string]int // connector_channel_id -> producer index
	acks    atomic.Int64
	msgs    atomic.Int64 // chat.message packets seen by the observer
	seq     atomic.Int64
	starts  sync.Map // key -> time.Time
	mu      sync.Mutex
	hist    Histogram
	// rejected counts the rejected acks by code (a retry follows each).
	rejected map[string]int64
}

func newChatDriver(ackDir protocol.Direction, l chatLoad) *chatDriver {
	return &chatDriver{ackDir: ackDir, perChannel: l.window, pause: l.pause}
}

// bind sets the channels the producers send on: producer i sends on
// channels[i]. It must be called once, before the first message is sent.
func (d *chatDriver) bind(channels []string) {
	d.pending = make([]chan struct{}, len(channels))
	d.index = make(map[string]int, len(channels))
	for i, id := range channels {
		d.pending[i] = make(chan struct{}, d.perChannel)
		d.index[id] = i
	}
}

// observe is the host's packet observer: it counts the acks.
func (d *chatDriver) observe(dir protocol.Direction, _ string, env *protocol.Envelope) {
	if dir != d.ackDir && env.Type == protocol.TypeChatMessage {
		d.msgs.Add(1)
	}
	if dir != d.ackDir || env.Type != protocol.TypeChatMessageAck {
		return
	}
	var ack protocol.ChatAckPayload
	if env.DecodePayload(&ack) == nil && ack.Status == protocol.AckRejected {
		d.mu.Lock()
		if d.rejected == nil {
			d.rejected = map[string]int64{}
		}
		d.rejected[ack.Code+": "+ack.Message]++
		d.mu.Unlock()
		return // the message stays pending: its retry is acked later
	}
	i, ok := d.index[env.ConnectorChannelID]
	if !ok {
		i = -1
	}
	d.acked(i)
}

// acked counts one acked message of producer i (-1: a channel the driver
// does not know) and frees a slot of its channel. Acks are counted over all
// channels (a late or duplicate ack may free a slot early: run then ends
// with messages still unacked, which notes reports).
func (d *chatDriver) acked(i int) {
	d.acks.Add(1)
	if i < 0 || i >= len(d.pending) {
		return
	}
	select {
	case <-d.pending[i]:
	default:
	}
}

// arrived records the latency of the message whose text starts with its
// key (see chatText).
func (d *chatDriver) arrived(text string) {
	key, _, _ := strings.Cut(text, " ")
	v, ok := d.starts.LoadAndDelete(key)
	if !ok {
		return
	}
	lat := time.Since(v.(time.Time))
	d.mu.Lock()
	d.hist.Record(lat)
	d.mu.Unlock()
}

// run sends from producers goroutines for d, then waits for every ack, and
// returns the messages acked per second of the whole window.
func (d *chatDriver) run(ctx context.Context, producers int, dur time.Duration,
	send func(ctx context.Context, p int, key string) error) (chatRun, error) {
	d.mu.Lock()
	d.hist = Histogram{}
	d.mu.Unlock()
	base := d.acks.Load()
	var sent atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	mem := startMem()
	t0 := time.Now()
	deadline := t0.Add(dur)
	// A producer stops waiting for a slot at the deadline: a channel whose
	// messages are never accepted (rejected for good, expired) keeps its
	// slots.
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				select {
				case d.pending[p] <- struct{}{}:
				case <-wctx.Done():
					return
				}
				if d.pause > 0 {
					sleep(wctx, d.pause)
				}
				key := "m" + strconv.FormatInt(d.seq.Add(1), 10)
				d.starts.Store(key, time.Now())
				if err := send(ctx, p, key); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return chatRun{}, firstErr
	}
	limit := time.Now().Add(chatTimeout)
	for d.acks.Load()-base < sent.Load() && time.Now().Before(limit) {
		if ctx.Err() != nil {
			return chatRun{}, ctx.Err()
		}
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(t0)
	allocs, bytes := mem.stop()
	acked := min(d.acks.Load()-base, sent.Load())
	out := chatRun{measured: measured{ops: acked, elapsed: elapsed, allocs: allocs, bytes: bytes},
		sent: sent.Load(), onWire: d.msgs.Load()}
	if acked < out.sent {
		out.elapsed = time.Since(t0) - chatTimeout // the window ended with the last ack
		d.starts.Range(func(_, _ any) bool { out.neverArrived++; return true })
		// Forget them and free their pending slots.
		d.starts.Clear()
		for _, c := range d.pending {
			drain(c)
		}
	}
	d.mu.Lock()
	out.hist = d.hist
	for k, n := range d.rejected {
		out.rejected = append(out.rejected, Metric{Name: "rejected_acks", Value: float64(n), Unit: k})
	}
	d.rejected = nil
	d.mu.Unlock()
	if acked == 0 {
		return out, errors.New("no message acked")
	}
	return out, nil
}

// chatRun is the outcome of one chatDriver.run.
type chatRun struct {
	measured
	sent         int64 // messages handed to the sender
	onWire       int64 // chat.message packets seen, retries included, since the driver started
	neverArrived int   // messages the receiving handler never saw
	rejected     []Metric
}

// notes returns the figures that say what went wrong, if anything did.
func (c chatRun) notes() []Metric {
	if c.ops >= c.sent {
		return c.rejected
	}
	return append(c.rejected, []Metric{
		{Name: "not_acked", Value: float64(c.sent - c.ops), Unit: "of " + strconv.FormatInt(c.sent, 10) + " sent, " + chatTimeout.String() + " after the last send"},
		{Name: "never_reached_handler", Value: float64(c.neverArrived), Unit: "messages"},
		{Name: "chat_message_packets_on_wire", Value: float64(c.onWire), Unit: "since start, retries included"},
	}...)
}

// drain empties c without blocking: acks may take tokens meanwhile.
func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
