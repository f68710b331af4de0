package wechat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Client is a channel's live connection to its bot account: the API client
// with the bot token, the per-peer reply context and the typing indicator.
// The SDK makes it on sign-in and restore and closes it when the binding
// ends.
type Client struct {
	c   *Connector
	ch  *connector.Channel
	b   Binding
	api *ilink

	// mu serialises the read-modify-write of the peer state.
	mu sync.Mutex

	// typing is the running typing indicator, if any.
	tmu    sync.Mutex
	typing *typingLoop
	closed bool
}

// newClient is the SDK's client constructor. On restore it checks the
// stored token with a getconfig for the owner (-14 means the binding
// expired); on a sign-in iLink has just issued or confirmed the token
// (get_qrcode_status), so it is not checked a second time.
func (c *Connector) newClient(ctx context.Context, ch *connector.Channel, b Binding, why connector.ClientReason) (*Client, error) {
	cl := &Client{c: c, ch: ch, b: b, api: &ilink{hc: c.hc, base: orStr(b.BaseURL, c.opts.APIURL), token: b.BotToken, agent: c.agent()}}
	if why == connector.ClientRestore && b.OwnerID != "" {
		if _, err := cl.config(ctx, b.OwnerID, ""); err != nil {
			if errors.Is(err, errSessionExpired) {
				return nil, fmt.Errorf("%w: %w", connector.ErrBindingExpired, err)
			}
			var api *apiError
			if !errors.As(err, &api) {
				return nil, err // not reachable: the SDK retries
			}
			// Another refusal of getconfig says nothing about the token.
			c.srv.Logger().Info("wechat: getconfig refused at sign-in", "ret", api.Ret, "errcode", api.ErrCode)
		}
	}
	return cl, nil
}

// Close stops the typing indicator (without a cancel call: the token may
// be gone).
func (cl *Client) Close(context.Context) error {
	cl.tmu.Lock()
	t := cl.typing
	cl.typing, cl.closed = nil, true
	cl.tmu.Unlock()
	if t != nil {
		t.stop(false)
	}
	return nil
}

// expire moves the channel to expired after an errcode -14 (§4): the user
// must scan again. The binding is kept for the binded_redirect case.
func (c *Connector) expire(ch *connector.Channel, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := ch.SetStatus(ctx, protocol.StatusExpired); err != nil {
		c.srv.Logger().Warn("wechat: mark channel expired", "channel", ch.ID(), "err", err)
	}
	c.srv.Logger().Warn("wechat: the WeChat session expired (errcode -14); scan the QR code again", "channel", ch.ID(), "call", why)
}

// Peer state (Channel.SaveState): the latest sender and each peer's latest
// context_token.
const (
	stateCursor = "cursor"
	statePeers  = "peers"
	// maxPeers and maxPeerStateBytes bound the peer state.
	maxPeers          = 32
	maxPeerStateBytes = 12 << 10
)

type peerState struct {
	// Bot is the bot account the peers wrote to: context tokens of
	// another bot are of no use.
	Bot string `json:"bot"`
	// Last is the sender of the latest inbound message.
	Last  string     `json:"last,omitempty"`
	Peers []peerInfo `json:"peers,omitempty"` // newest first
}

type peerInfo struct {
	User    string `json:"user"`
	Context string `json:"context,omitempty"`
	At      int64  `json:"at"`
}

// remember records user as the latest sender and token as its context.
func (cl *Client) remember(ctx context.Context, user, token string) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var ps peerState
	if _, err := cl.ch.LoadState(ctx, statePeers, &ps); err != nil {
		return fmt.Errorf("wechat: load peers: %w", err)
	}
	if ps.Bot != cl.b.BotID {
		ps = peerState{Bot: cl.b.BotID}
	}
	ps.Last = user
	list := []peerInfo{{User: user, Context: token, At: time.Now().UnixMilli()}}
	for _, p := range ps.Peers {
		if p.User != user {
			list = append(list, p)
		}
	}
	size := 0
	for i, p := range list {
		size += len(p.User) + len(p.Context) + 48
		if i >= maxPeers || size > maxPeerStateBytes {
			list = list[:i]
			break
		}
	}
	ps.Peers = list
	if err := cl.ch.SaveState(ctx, statePeers, ps); err != nil {
		return fmt.Errorf("wechat: save peers: %w", err)
	}
	return nil
}

// peer returns who a reply goes to: the latest sender, else the owner,
// with that peer's latest context_token ("" when none is known).
func (cl *Client) peer(ctx context.Context) (user, token string, err error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var ps peerState
	if _, err := cl.ch.LoadState(ctx, statePeers, &ps); err != nil {
		return "", "", fmt.Errorf("wechat: load peers: %w", err)
	}
	if ps.Bot != cl.b.BotID {
		ps = peerState{}
	}
	user = ps.Last
	if user == "" {
		user = cl.b.OwnerID
	}
	for _, p := range ps.Peers {
		if p.User == user {
			token = p.Context
		}
	}
	if user == "" {
		return "", "", &protocol.Error{Code: protocol.CodeTargetDeliveryFailed,
			Message: "nobody to answer: no WeChat user wrote to this bot yet and its owner is unknown"}
	}
	return user, token, nil
}
