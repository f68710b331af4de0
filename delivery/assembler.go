package delivery

import (
	"container/list"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Defaults of [AssemblerOptions] (IM v2 §6 asks every implementation to
// document its delta-cache TTL and capacity; these are xconn's).
const (
	DefaultAssemblerMessages   = 1000
	DefaultAssemblerMsgBytes   = 1 << 20
	DefaultAssemblerTotalBytes = 16 << 20
	DefaultAssemblerTTL        = 10 * time.Minute
)

// AssemblerOptions bounds an [Assembler].
type AssemblerOptions struct {
	// MaxMessages bounds the unfinished messages held (default 1,000); the
	// oldest is dropped to make room.
	MaxMessages int
	// MaxMessageBytes bounds one message's assembled text (default 1 MiB);
	// a delta beyond it is rejected.
	MaxMessageBytes int
	// MaxBytes bounds all assembled text (default 16 MiB); the oldest
	// messages are dropped to make room.
	MaxBytes int
	// TTL drops a message this long after its first delta (default 10 min);
	// expiry is checked on every call, no goroutine runs.
	TTL time.Duration
	// Clock supplies the time (default the system clock).
	Clock Clock
}

type deltaKey struct{ channel, messageID string }

type deltaBuf struct {
	key     deltaKey
	created time.Time
	text    strings.Builder // the assembled text
	ends    []int           // ends[i] is the end offset of sequence i+1
	size    int
	elem    *list.Element
}

// Assembler assembles chat.message.delta fragments per (channel,
// message_id) in memory (IM v2 §6). It is safe for concurrent use.
type Assembler struct {
	opts  AssemblerOptions
	clock Clock

	mu    sync.Mutex
	bufs  map[deltaKey]*deltaBuf // bounded by MaxMessages
	order *list.List             // of *deltaBuf, oldest first
	bytes int
}

// NewAssembler returns an Assembler with opts' bounds (zero fields take the
// defaults).
func NewAssembler(opts AssemblerOptions) *Assembler {
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultAssemblerMessages
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultAssemblerMsgBytes
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultAssemblerTotalBytes
	}
	opts.MaxMessageBytes = min(opts.MaxMessageBytes, opts.MaxBytes)
	if opts.TTL <= 0 {
		opts.TTL = DefaultAssemblerTTL
	}
	return &Assembler{opts: opts, clock: clockOrSystem(opts.Clock), bufs: make(map[deltaKey]*deltaBuf), order: list.New()}
}

// Add applies one delta and returns the text assembled so far. added is
// false when the delta was a retransmission (same sequence, same text) and
// changed nothing. A sequence that does not start at 1, skips a number or
// repeats a number with other text returns a *protocol.Error with
// CodeDeltaSequenceInvalid (retryable=false) and changes nothing; a delta
// that would exceed MaxMessageBytes returns one with CodeInvalidPacket.
func (a *Assembler) Add(channel, messageID string, sequence int64, text string) (assembled string, added bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	a.expire(now)
	k := deltaKey{channel, messageID}
	b := a.bufs[k]
	n := int64(0)
	if b != nil {
		n = int64(len(b.ends))
	}
	switch {
	case sequence >= 1 && sequence <= n:
		if b.part(sequence) != text {
			return "", false, protocol.Errorf(protocol.CodeDeltaSequenceInvalid,
				"delta %d of message %q conflicts with the one received", sequence, messageID)
		}
		return b.text.String(), false, nil
	case sequence != n+1:
		return "", false, protocol.Errorf(protocol.CodeDeltaSequenceInvalid,
			"delta sequence %d of message %q, want %d", sequence, messageID, n+1)
	}
	size := len(text)
	if b != nil {
		size += b.size
	}
	if size > a.opts.MaxMessageBytes {
		return "", false, protocol.Errorf(protocol.CodeInvalidPacket,
			"assembled deltas of message %q exceed %d bytes", messageID, a.opts.MaxMessageBytes)
	}
	if b == nil {
		for len(a.bufs) >= a.opts.MaxMessages {
			a.drop(a.order.Front().Value.(*deltaBuf))
		}
		b = &deltaBuf{key: k, created: now}
		b.elem = a.order.PushBack(b)
		a.bufs[k] = b
	}
	b.text.WriteString(text)
	b.ends = append(b.ends, b.text.Len())
	b.size += len(text)
	a.bytes += len(text)
	for a.bytes > a.opts.MaxBytes && a.order.Front().Value.(*deltaBuf) != b {
		a.drop(a.order.Front().Value.(*deltaBuf))
	}
	return b.text.String(), true, nil
}

// part returns the text of sequence seq (1-based, within range).
func (b *deltaBuf) part(seq int64) string {
	start := 0
	if seq > 1 {
		start = b.ends[seq-2]
	}
	return b.text.String()[start:b.ends[seq-1]]
}

// Final ends a message: it returns the text assembled from its deltas
// (ok false when there were none, for example a final without deltas) and
// forgets the message. The final chat.message text replaces this text.
func (a *Assembler) Final(channel, messageID string) (assembled string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire(a.clock.Now())
	b := a.bufs[deltaKey{channel, messageID}]
	if b == nil {
		return "", false
	}
	a.drop(b)
	return b.text.String(), true
}

// DropChannel forgets every unfinished message of channel.
func (a *Assembler) DropChannel(channel string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for e := a.order.Front(); e != nil; {
		next := e.Next()
		if b := e.Value.(*deltaBuf); b.key.channel == channel {
			a.drop(b)
		}
		e = next
	}
}

// Len returns the number of unfinished messages and their assembled bytes.
func (a *Assembler) Len() (messages, bytes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire(a.clock.Now())
	return len(a.bufs), a.bytes
}

func (a *Assembler) expire(now time.Time) {
	for e := a.order.Front(); e != nil; e = a.order.Front() {
		b := e.Value.(*deltaBuf)
		if now.Sub(b.created) < a.opts.TTL {
			return
		}
		a.drop(b)
	}
}

func (a *Assembler) drop(b *deltaBuf) {
	a.order.Remove(b.elem)
	delete(a.bufs, b.key)
	a.bytes -= b.size
}
