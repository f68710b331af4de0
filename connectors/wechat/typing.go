package wechat

import (
	"context"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// config calls getconfig for user and returns its typing_ticket (§10).
func (cl *Client) config(ctx context.Context, user, contextToken string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req := struct {
		User    string   `json:"ilink_user_id"`
		Context string   `json:"context_token,omitempty"`
		Base    baseInfo `json:"base_info"`
	}{user, contextToken, cl.api.baseInfo()}
	var out struct {
		Ticket string `json:"typing_ticket"`
	}
	err := cl.api.post(ctx, "getconfig", "ilink/bot/getconfig", nil, req, &out)
	return out.Ticket, err
}

// sendTyping calls sendtyping: status 1 typing, 2 cancel.
func (cl *Client) sendTyping(ctx context.Context, user, ticket string, status int) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	req := struct {
		User   string   `json:"ilink_user_id"`
		Ticket string   `json:"typing_ticket"`
		Status int      `json:"status"`
		Base   baseInfo `json:"base_info"`
	}{user, ticket, status, cl.api.baseInfo()}
	return cl.api.post(ctx, "sendtyping", "ilink/bot/sendtyping", nil, req, nil)
}

// typingLoop keeps "typing" alive for one peer until stopped or
// TypingTimeout passes.
type typingLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	// sendCancel says whether stop's caller wants the cancel call.
	sendCancel chan bool
}

// onActivity maps chat.activity onto the typing indicator (IM v2 §8):
// thinking and tool show typing, idle clears it. Failures never touch
// message delivery.
func (c *Connector) onActivity(ctx context.Context, ch *connector.Channel, a connector.Activity) error {
	cl, err := c.clients.Get(ch)
	if err != nil {
		return nil
	}
	if a.Status == protocol.ActivityIdle {
		cl.stopTyping()
		return nil
	}
	user, token, err := cl.peer(ctx)
	if err != nil {
		return nil
	}
	cl.startTyping(user, token)
	return nil
}

// startTyping starts the keepalive unless one runs already.
func (cl *Client) startTyping(user, token string) {
	cl.tmu.Lock()
	defer cl.tmu.Unlock()
	if cl.closed {
		return
	}
	if old := cl.typing; old != nil {
		select {
		case <-old.done: // ended by TypingTimeout: start a new one
			old.cancel()
		default:
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cl.c.opts.TypingTimeout)
	t := &typingLoop{cancel: cancel, done: make(chan struct{}), sendCancel: make(chan bool, 1)}
	cl.typing = t
	go t.run(ctx, cl, user, token)
}

// stopTyping ends the keepalive and waits until WeChat was told to stop.
func (cl *Client) stopTyping() {
	cl.tmu.Lock()
	t := cl.typing
	cl.typing = nil
	cl.tmu.Unlock()
	if t != nil {
		t.stop(true)
	}
}

func (t *typingLoop) stop(sendCancel bool) {
	t.sendCancel <- sendCancel
	t.cancel()
	<-t.done
}

func (t *typingLoop) run(ctx context.Context, cl *Client, user, token string) {
	defer close(t.done)
	log := cl.c.srv.Logger()
	ticket, err := cl.config(ctx, user, token)
	if err != nil {
		log.Debug("wechat: getconfig for typing", "err", err)
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(cl.c.opts.TypingInterval)
	defer tick.Stop()
	for {
		if err := cl.sendTyping(ctx, user, ticket, 1); err != nil && ctx.Err() == nil {
			log.Debug("wechat: sendtyping", "err", err)
		}
		select {
		case <-tick.C:
			continue
		case <-ctx.Done():
		}
		break
	}
	send := true
	select {
	case send = <-t.sendCancel:
	default: // timed out
	}
	if send {
		cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := cl.sendTyping(cctx, user, ticket, 2); err != nil {
			log.Debug("wechat: cancel typing", "err", err)
		}
	}
}
