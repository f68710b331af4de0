package xagent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// breakage names one deliberate violation a mangling proxy adds to a
// correct host's traffic. The proxy is test-only: the host has no knobs
// for breaking the protocol.
type breakage string

const (
	deltasFromZero   breakage = "deltas-from-0"     // delta sequences start at 0
	noReplyTo        breakage = "no-reply-to"       // chat.message.acks lose reply_to
	secondReply      breakage = "second-reply"      // a duplicate gets a second reply
	noBearer         breakage = "no-bearer"         // /ws without the API key
	wrongSubprotocol breakage = "wrong-subprotocol" // /ws offers another subprotocol
	resendAccepted   breakage = "resend-accepted"   // an accepted final comes again after a reconnect
	// v1URLIgnored hides the url of message.push files from the host, as
	// a host that reads download_url only would see them.
	v1URLIgnored breakage = "v1-url-ignored"
	// otherOriginRefused is no proxy change: the host is configured as
	// xconn's was before issue 35, downloading from the connector's
	// origin only (Options.DownloadOrigins).
	otherOriginRefused breakage = "other-origin-refused"
)

// manglingProxy sits between a host and the scripted Connector: HTTP is
// passed through, /ws is re-dialed upstream and its packets pass one
// function that applies the breakage. Every connection's goroutines are
// owned by its handler, which waits for them; close ends the server.
type manglingProxy struct {
	brk      breakage
	upstream *url.URL
	srv      *httptest.Server

	mu       sync.Mutex
	finals   map[string][]byte // host finals by message_id
	accepted []string          // message_ids the Connector accepted, in order
}

func newManglingProxy(t *testing.T, upstream string, brk breakage) *manglingProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &manglingProxy{brk: brk, upstream: u, finals: map[string][]byte{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == protocol.PathWS {
			p.serveWS(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *manglingProxy) serveWS(w http.ResponseWriter, r *http.Request) {
	h := http.Header{}
	if a := r.Header.Get("Authorization"); a != "" && p.brk != noBearer {
		h.Set("Authorization", a)
	}
	subs := []string{protocol.Subprotocol}
	if p.brk == wrongSubprotocol {
		subs = []string{"xagent.connector.packet.v0"}
	}
	up := *p.upstream
	up.Scheme, up.Path = "ws", protocol.PathWS
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	server, _, err := websocket.Dial(ctx, up.String(), &websocket.DialOptions{HTTPHeader: h, Subprotocols: subs})
	if err != nil {
		http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer server.CloseNow()
	host, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{protocol.Subprotocol}})
	if err != nil {
		return
	}
	defer host.CloseNow()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // host -> Connector, mangled
		defer wg.Done()
		defer cancel()
		for {
			_, data, err := host.Read(ctx)
			if err != nil {
				_ = server.Close(websocket.StatusNormalClosure, "host left")
				return
			}
			for _, out := range p.toConnector(data) {
				if server.Write(ctx, websocket.MessageText, out) != nil {
					return
				}
			}
		}
	}()
	go func() { // Connector -> host, observed
		defer wg.Done()
		defer cancel()
		for {
			_, data, err := server.Read(ctx)
			if err != nil {
				status := websocket.CloseStatus(err)
				if status < 0 {
					status = websocket.StatusGoingAway
				}
				_ = host.Close(status, "upstream closed")
				return
			}
			p.fromConnector(data)
			if host.Write(ctx, websocket.MessageText, p.mangleFromConnector(data)) != nil {
				return
			}
			for _, out := range p.afterConnector(data) {
				if server.Write(ctx, websocket.MessageText, out) != nil {
					return
				}
			}
		}
	}()
	wg.Wait()
}

// toConnector applies the breakage to one host packet; it returns the
// frames to send instead.
func (p *manglingProxy) toConnector(data []byte) [][]byte {
	env, err := protocol.DecodeEnvelope(data)
	if err != nil {
		return [][]byte{data}
	}
	out := [][]byte{data}
	reencode := func() {
		if b, err := env.Encode(); err == nil {
			out[0] = b
		}
	}
	switch {
	case env.Type == protocol.TypeChatMessageDelta && p.brk == deltasFromZero:
		var d protocol.ChatDeltaPayload
		if env.DecodePayload(&d) == nil {
			d.Sequence--
			_ = env.SetPayload(d)
			reencode()
		}
	case env.Type == protocol.TypeChatMessageAck && p.brk == noReplyTo:
		env.ReplyTo = ""
		reencode()
	case env.Type == protocol.TypeChatMessageAck && p.brk == secondReply:
		var a protocol.ChatAckPayload
		if env.DecodePayload(&a) == nil && a.Status == protocol.AckDuplicate {
			extra := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_proxy_second", ConnectorChannelID: env.ConnectorChannelID,
				Type: protocol.TypeChatMessage}
			_ = extra.SetPayload(protocol.ChatMessagePayload{MessageID: "amsg_proxy_second_reply", Text: "a second reply"})
			if b, err := extra.Encode(); err == nil {
				out = append(out, b)
			}
		}
	case env.Type == protocol.TypeChatMessage:
		var m protocol.ChatMessagePayload
		if env.DecodePayload(&m) == nil {
			p.mu.Lock()
			p.finals[m.MessageID] = append([]byte(nil), data...)
			p.mu.Unlock()
		}
	}
	return out
}

// fromConnector learns which finals the Connector accepted.
func (p *manglingProxy) fromConnector(data []byte) {
	env, err := protocol.DecodeEnvelope(data)
	if err != nil || env.Type != protocol.TypeChatMessageAck {
		return
	}
	var a protocol.ChatAckPayload
	if env.DecodePayload(&a) == nil && a.Status == protocol.AckAccepted {
		p.mu.Lock()
		p.accepted = append(p.accepted, a.MessageID)
		p.mu.Unlock()
	}
}

// mangleFromConnector applies the breakage to one Connector packet.
func (p *manglingProxy) mangleFromConnector(data []byte) []byte {
	if p.brk != v1URLIgnored {
		return data
	}
	env, err := protocol.DecodeEnvelope(data)
	if err != nil || env.Type != protocol.TypeMessagePush {
		return data
	}
	var m protocol.MessagePushPayload
	if env.DecodePayload(&m) != nil {
		return data
	}
	for i := range m.Files {
		m.Files[i].URL = ""
	}
	if env.SetPayload(m) != nil {
		return data
	}
	b, err := env.Encode()
	if err != nil {
		return data
	}
	return b
}

// afterConnector returns packets to inject after a Connector packet: with
// resendAccepted, the last accepted final again once a channel is reopened.
func (p *manglingProxy) afterConnector(data []byte) [][]byte {
	if p.brk != resendAccepted {
		return nil
	}
	env, err := protocol.DecodeEnvelope(data)
	if err != nil || env.Type != protocol.TypeChannelOpenAck {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.accepted) == 0 {
		return nil
	}
	raw := p.finals[p.accepted[len(p.accepted)-1]]
	again, err := protocol.DecodeEnvelope(raw)
	if err != nil || again.ConnectorChannelID != env.ConnectorChannelID {
		return nil
	}
	again.PacketID = "pkt_proxy_resend"
	b, err := again.Encode()
	if err != nil {
		return nil
	}
	return [][]byte{b}
}
