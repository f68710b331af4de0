package chaos

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Checker collects what a chaos run observed and decides whether the
// delivery invariants held. Safe for concurrent use.
//
// The driver reports each inbound message it posted (Sent, or Maybe when
// the post failed without an answer, so it may or may not be queued), each
// chat.message.ack the host sent (Ack), each assistant message the browser
// saw (Final), each tool call the host made and each page message a tool
// call produced (ToolDone, ToolEffect), each expired outcome (Expired),
// faults, leaks and violations found elsewhere.
type Checker struct {
	mu        sync.Mutex
	sent      map[string]*inbound // by text, which is unique per post
	byID      map[string]*inbound // by message_id
	order     map[string][]int    // room → seqs in the order the host accepted them
	finals    map[string]map[string]bool
	finalFile map[string]bool
	toolsDone map[string]map[string]bool // call id → result message ids
	toolsPage map[string]map[string]bool // call id → page message ids
	toolsUsed map[string]bool
	faults    map[Fault]int
	leaks     []string
	problems  []string
}

// inbound is one posted message.
type inbound struct {
	room      string
	seq       int
	text      string
	id        string
	maybe     bool // post failed without an answer
	withFile  bool
	accepted  int // accepted acks
	duplicate int // duplicate acks
	expired   bool
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{sent: map[string]*inbound{}, byID: map[string]*inbound{}, order: map[string][]int{},
		finals: map[string]map[string]bool{}, finalFile: map[string]bool{},
		toolsDone: map[string]map[string]bool{}, toolsPage: map[string]map[string]bool{}, toolsUsed: map[string]bool{},
		faults: map[Fault]int{}}
}

// Sent records a message the connector answered 202 for, with its
// message_id.
func (c *Checker) Sent(room string, seq int, text, messageID string, withFile bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.sent[text]
	if !ok {
		in = &inbound{room: room, seq: seq, text: text, withFile: withFile}
		c.sent[text] = in
	}
	if in.id != "" && in.id != messageID {
		c.problem("message %q answered with id %s but received as %s", text, messageID, in.id)
		return
	}
	in.id, in.maybe = messageID, false
	c.byID[messageID] = in
}

// Maybe records a post that failed without an answer: it counts as sent
// only if the host receives it.
func (c *Checker) Maybe(room string, seq int, text string, withFile bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sent[text]; !ok {
		c.sent[text] = &inbound{room: room, seq: seq, text: text, maybe: true, withFile: withFile}
	}
}

// Received records that the host's agent saw messageID with text (the
// link between the host's acks and the posts).
func (c *Checker) Received(messageID, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.sent[text]
	if !ok {
		c.problem("the host received a message nobody sent: %s", messageID)
		return
	}
	if in.id == "" {
		in.id = messageID
		c.byID[messageID] = in
	} else if in.id != messageID {
		c.problem("message %q arrived with two ids: %s and %s", text, in.id, messageID)
	}
}

// Ack records a chat.message.ack the host sent for messageID: status
// "accepted" or "duplicate" (others are ignored).
func (c *Checker) Ack(messageID, status string) {
	if status != "accepted" && status != "duplicate" {
		return // a rejection may come before the post's 202 names the id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.byID[messageID]
	if !ok {
		c.problem("the host acknowledged an unknown message %s", messageID)
		return
	}
	switch status {
	case "accepted":
		in.accepted++
		if in.accepted == 1 {
			c.order[in.room] = append(c.order[in.room], in.seq)
		}
	case "duplicate":
		in.duplicate++
	}
}

// Final records an assistant message shown on the page: finalID answered
// the inbound message whose text is replyTo ("" for none); withFile says
// whether it carried a file.
func (c *Checker) Final(replyTo, finalID string, withFile bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sent[replyTo]; !ok {
		c.problem("a reply to a message nobody sent: %s", finalID)
		return
	}
	if c.finals[replyTo] == nil {
		c.finals[replyTo] = map[string]bool{}
	}
	c.finals[replyTo][finalID] = true
	if withFile {
		c.finalFile[replyTo] = true
	}
}

// ToolStarted records that the host started tool call callID (it retries
// the same id until it gets a result).
func (c *Checker) ToolStarted(callID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toolsUsed[callID] = true
}

// ToolDone records the result of tool call callID: the page message it
// reports.
func (c *Checker) ToolDone(callID, resultID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toolsUsed[callID] = true
	if c.toolsDone[callID] == nil {
		c.toolsDone[callID] = map[string]bool{}
	}
	c.toolsDone[callID][resultID] = true
}

// ToolEffect records a page message produced by tool call callID.
func (c *Checker) ToolEffect(callID, pageID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.toolsPage[callID] == nil {
		c.toolsPage[callID] = map[string]bool{}
	}
	c.toolsPage[callID][pageID] = true
}

// Expired records the connector's expired outcome for messageID.
func (c *Checker) Expired(messageID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.byID[messageID]; ok {
		in.expired = true
	}
}

// Fault records one injected fault.
func (c *Checker) Fault(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[f]++
}

// Leak records a leak: a canary seen somewhere, or resource growth.
func (c *Checker) Leak(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.leaks) < maxLeaks {
		c.leaks = append(c.leaks, what)
	}
}

// Problem records another broken invariant.
func (c *Checker) Problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problem(format, args...)
}

func (c *Checker) problem(format string, args ...any) {
	if len(c.problems) < maxLeaks {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

// Pending reports what still waits for delivery: inbound messages neither
// accepted nor expired, replies not yet shown and tool calls without a
// page message. A run drains until it is zero before Result.
func (c *Checker) Pending() (messages, replies, tools int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range c.sent {
		switch {
		case in.maybe && in.id == "":
		case in.accepted == 0 && !in.expired:
			messages++
		case in.accepted > 0 && len(c.finals[in.text]) == 0:
			replies++
		}
	}
	for id := range c.toolsUsed {
		if len(c.toolsPage[id]) == 0 || len(c.toolsDone[id]) == 0 {
			tools++
		}
	}
	return messages, replies, tools
}

// Result is the verdict of a run: the fields of the final line, with the
// details behind them.
type Result struct {
	Seed       uint64         `json:"seed"`
	Sent       int            `json:"sent"`
	Accepted   int            `json:"accepted"`
	Lost       int            `json:"lost"`
	Duplicated int            `json:"duplicated"`
	Expired    int            `json:"expired"`
	Faults     int            `json:"faults"`
	Leaks      int            `json:"leaks"`
	Finals     int            `json:"finals"`
	ToolCalls  int            `json:"tool_calls"`
	Problems   int            `json:"problems"`
	ByFault    map[Fault]int  `json:"by_fault"`
	Details    []string       `json:"details,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
	OK         bool           `json:"ok"`
}

// Line is the run's last output line.
func (r Result) Line() string {
	return fmt.Sprintf("invariants: sent=%d accepted=%d lost=%d duplicated=%d expired=%d faults=%d leaks=%d",
		r.Sent, r.Accepted, r.Lost, r.Duplicated, r.Expired, r.Faults, r.Leaks)
}

// JSON encodes the result as one line.
func (r Result) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Result computes the verdict.
func (c *Checker) Result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Result{ByFault: map[Fault]int{}}
	var details []string
	add := func(format string, args ...any) {
		if len(details) < 50 {
			details = append(details, fmt.Sprintf(format, args...))
		}
	}
	texts := make([]string, 0, len(c.sent))
	for t := range c.sent {
		texts = append(texts, t)
	}
	sort.Strings(texts)
	for _, t := range texts {
		in := c.sent[t]
		if in.maybe && in.id == "" {
			continue // never queued
		}
		r.Sent++
		switch {
		case in.accepted > 0 && in.expired:
			r.Lost++ // reported expired though delivered: the report is wrong
			add("message %s (%s #%d) was accepted and reported expired", in.id, in.room, in.seq)
		case in.accepted > 0:
			r.Accepted++
		case in.expired:
			r.Expired++
		default:
			r.Lost++
			add("message %s (%s #%d) neither accepted nor expired", in.id, in.room, in.seq)
		}
		if in.accepted > 1 {
			r.Duplicated += in.accepted - 1
			add("message %s accepted %d times", in.id, in.accepted)
		}
		if in.accepted > 0 {
			n := len(c.finals[t])
			r.Finals += min(n, 1)
			switch {
			case n == 0:
				r.Lost++
				add("no reply shown for message %s", in.id)
			case n > 1:
				r.Duplicated += n - 1
				add("reply to message %s shown %d times", in.id, n)
			}
			if n > 0 && in.withFile && !c.finalFile[t] {
				r.Lost++
				add("reply to message %s lost its file", in.id)
			}
		} else if len(c.finals[t]) > 0 {
			r.Duplicated++
			add("reply shown for message %s that was never accepted", in.id)
		}
	}
	problems := append([]string(nil), c.problems...)
	for room, seqs := range c.order {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				problems = append(problems, fmt.Sprintf("room %s: message #%d accepted after #%d", room, seqs[i], seqs[i-1]))
			}
		}
	}
	calls := make([]string, 0, len(c.toolsUsed))
	for id := range c.toolsUsed {
		calls = append(calls, id)
	}
	sort.Strings(calls)
	for _, id := range calls {
		r.ToolCalls++
		pages, results := len(c.toolsPage[id]), len(c.toolsDone[id])
		switch {
		case pages == 0:
			r.Lost++
			add("tool call %s never executed", id)
		case pages > 1:
			r.Duplicated += pages - 1
			add("tool call %s executed %d times", id, pages)
		}
		if results == 0 {
			r.Lost++
			add("tool call %s never returned a result", id)
		} else if results > 1 {
			r.Duplicated += results - 1
			add("tool call %s returned %d different results", id, results)
		}
	}
	for f, n := range c.faults {
		r.ByFault[f] = n
		r.Faults += n
	}
	r.Leaks = len(c.leaks)
	for _, l := range c.leaks {
		add("leak: %s", l)
	}
	for _, p := range problems {
		add("broken: %s", p)
	}
	r.Details = details
	r.Problems = len(problems)
	r.OK = r.Lost == 0 && r.Duplicated == 0 && r.Leaks == 0 && len(problems) == 0
	return r
}
