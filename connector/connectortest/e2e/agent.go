package e2e

import (
	"context"
	"strings"
	"sync"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// holdAgent is the echo agent, except for the message whose text is hold:
// its answer streams one delta and then one more for each step, never the
// last word, until release is called (or the host ends the handler's
// context); then it streams the rest and sends the final. It lets the crash
// scenario kill the connector in the middle of a streamed answer. Safe for
// concurrent use.
type holdAgent struct {
	hold      string
	streaming chan struct{} // closed once the held answer's first delta went out
	step      chan struct{} // a receive lets one more delta out
	released  chan struct{}
	once      sync.Once
	rel       sync.Once
}

func newHoldAgent(hold string) *holdAgent {
	return &holdAgent{hold: hold, streaming: make(chan struct{}), step: make(chan struct{}), released: make(chan struct{})}
}

// release lets the held answer finish.
func (a *holdAgent) release() { a.rel.Do(func() { close(a.released) }) }

// steps is how many deltas step can let out after the first.
func (a *holdAgent) steps() int {
	return max(len(strings.Fields(host.EchoText(&host.UserMessage{Text: a.hold})))-2, 0)
}

// HandleMessage answers as host.Echo does, holding the answer to a.hold.
func (a *holdAgent) HandleMessage(ctx context.Context, msg *host.UserMessage, reply host.ReplyStream) error {
	if msg.Text != a.hold {
		return host.Echo{}.HandleMessage(ctx, msg, reply)
	}
	text := host.EchoText(msg)
	words := strings.Fields(text)
	if err := reply.Activity(ctx, protocol.ActivityThinking, ""); err != nil {
		return err
	}
	if err := reply.Delta(ctx, words[0]); err != nil {
		return err
	}
	a.once.Do(func() { close(a.streaming) })
	sent := 1
	for held := true; held; {
		select {
		case <-a.step:
			if sent < len(words)-1 {
				if err := reply.Delta(ctx, " "+words[sent]); err != nil {
					return err
				}
				sent++
			}
		case <-a.released:
			held = false
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, w := range words[sent:] {
		if err := reply.Delta(ctx, " "+w); err != nil {
			return err
		}
	}
	if _, err := reply.Final(ctx, text); err != nil {
		return err
	}
	return reply.Activity(ctx, protocol.ActivityIdle, "")
}
