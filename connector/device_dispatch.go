package connector

import (
	"sync"
	"time"

	"github.com/xconn/xconn/protocol"
)

// ToolMode says how the calls of a tool run beside the other work of
// their channel (Device Profile v1 §5: side-effecting operations on one
// device are serialised, observations may run concurrently). Set it in
// [ToolOptions.Mode].
type ToolMode int

const (
	// ToolSerial, the default, runs a call in the channel's order: it
	// waits for every earlier packet of the channel, and later packets of
	// the channel wait for it.
	ToolSerial ToolMode = iota
	// ToolObserve marks a tool that only reads the target (a status, a
	// screenshot, an accessibility dump). Its calls leave the channel's
	// queue and run in parallel with each other and with control calls,
	// at most MaxParallelObserve of them at once per channel; a call
	// beyond that runs in the channel's order instead.
	ToolObserve
	// ToolAct marks a tool with side effects on the target (a tap, a key
	// press, an app launch). Its calls leave the channel's queue, so that
	// observations are not held up behind a long action, and run one at
	// a time per channel, in arrival order. (A call still running from a
	// socket that closed may overlap the first call on the channel's new
	// socket; a target that cannot take that is serialised by the
	// connector's client too, as connectors/adb does.) An act tool is
	// idempotent by
	// (channel, Call.IdempotencyKey) as SideEffect makes a tool, and more
	// strictly: every outcome of its handler, failures and timeouts
	// included, is recorded, and a repeated call with the same key (its
	// tool_call_id, or without one its request_id) returns that first
	// outcome without acting again (a network retry is no permission to
	// act twice; a new action needs a new key). A refusal before the handler runs (validation,
	// an unavailable device) is not recorded. At most MaxQueuedActs
	// calls wait per channel; one more is refused with channel_busy.
	ToolAct
)

// Bounds of the off-queue tool calls of one channel on one socket.
const (
	// MaxParallelObserve bounds the ToolObserve calls running at once.
	MaxParallelObserve = 4
	// MaxQueuedActs bounds the ToolAct calls running or waiting.
	MaxQueuedActs = 16
)

// actRecordTimeout bounds storing an act's outcome after its socket
// closed.
const actRecordTimeout = 10 * time.Second

func (m ToolMode) String() string {
	switch m {
	case ToolObserve:
		return "observe"
	case ToolAct:
		return "act"
	}
	return "serial"
}

// toolLane holds the off-queue tool calls of one channel on one socket:
// the number of observations running and the FIFO of control calls with
// its one draining goroutine, owned by the socket's session (sess.wg).
type toolLane struct {
	sess      *session
	mu        sync.Mutex
	observing int
	acts      []func()
	running   bool
}

// dispatchTool runs a call of a ToolObserve or ToolAct tool off the
// channel's queue and reports true; it reports false when the call is to
// run in order (a ToolSerial tool, an unknown tool or channel, or every
// observation slot taken). It is called by a worker of sess, so sess.wg
// is above zero while it adds goroutines.
func (sess *session) dispatchTool(env *protocol.Envelope, p *protocol.ToolInvokePayload) bool {
	s := sess.srv
	s.mu.Lock()
	entry := s.tools[p.ToolID]
	var lane *toolLane
	if entry != nil && entry.opts.Mode != ToolSerial {
		if cs := s.channels[env.ConnectorChannelID]; cs != nil {
			if cs.lane == nil || cs.lane.sess != sess {
				cs.lane = &toolLane{sess: sess}
			}
			lane = cs.lane
		}
	}
	s.mu.Unlock()
	if lane == nil {
		return false
	}
	switch entry.opts.Mode {
	case ToolObserve:
		lane.mu.Lock()
		if lane.observing >= MaxParallelObserve {
			lane.mu.Unlock()
			return false
		}
		lane.observing++
		lane.mu.Unlock()
		sess.wg.Go(func() {
			defer func() {
				lane.mu.Lock()
				lane.observing--
				lane.mu.Unlock()
			}()
			sess.runDispatched(env, p)
		})
	case ToolAct:
		lane.mu.Lock()
		if len(lane.acts) >= MaxQueuedActs {
			lane.mu.Unlock()
			sess.replyError(env, protocol.TypeToolInvokeAck,
				protocol.Errorf(protocol.CodeChannelBusy, "%d control calls are already queued on this channel", MaxQueuedActs))
			return true
		}
		lane.acts = append(lane.acts, func() { sess.runDispatched(env, p) })
		start := !lane.running
		lane.running = true
		lane.mu.Unlock()
		if start {
			sess.wg.Go(lane.drain)
		}
	default:
		return false
	}
	return true
}

// drain runs the queued control calls one at a time until none is left.
// Calls still queued when the socket is gone are dropped unanswered and
// unrecorded (their handler never ran): xAgent sends them again.
func (l *toolLane) drain() {
	for {
		l.mu.Lock()
		if len(l.acts) == 0 || l.sess.ctx.Err() != nil {
			l.acts, l.running = nil, false
			l.mu.Unlock()
			return
		}
		f := l.acts[0]
		l.acts[0] = nil
		l.acts = l.acts[1:]
		l.mu.Unlock()
		f()
	}
}

// runDispatched answers one off-queue call; a panic outside the handler
// (which runTool already recovers) is answered as internal_error.
func (sess *session) runDispatched(env *protocol.Envelope, p *protocol.ToolInvokePayload) {
	defer func() {
		if r := recover(); r != nil {
			sess.srv.log.Error("connector: tool dispatch panicked", "tool", metricTool(sess.srv, p.ToolID))
			sess.replyError(env, protocol.TypeToolInvokeAck, protocol.Errorf(protocol.CodeInternal, "internal error"))
		}
	}()
	ctx, span := sess.packetSpan(env)
	defer span.End()
	sess.handleToolInvoke(ctx, env, p)
}
