package wsconn_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/internal/wsconn"
	"github.com/xconn/xconn/protocol"
)

// A server that answers every ping with a pong, and a client that sends one.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(served)
		c, err := wsconn.Accept(w, r, wsconn.Options{})
		if err != nil {
			return
		}
		work := make(chan *protocol.Envelope, 16)
		go func() { // the handler hands work off; this goroutine answers
			for env := range work {
				pong := env.Reply(protocol.TypePong)
				pong.PacketID = "pkt_pong"
				_ = c.Send(ctx, pong)
			}
		}()
		_ = c.Run(ctx, func(env *protocol.Envelope, raw []byte, err error) {
			if err == nil && env.Type == protocol.TypePing {
				work <- env
			}
		})
		close(work)
	}))
	defer srv.Close()

	c, err := wsconn.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil, wsconn.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	got := make(chan *protocol.Envelope, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(env *protocol.Envelope, raw []byte, err error) {
			if err == nil {
				got <- env
			}
		})
	}()
	_ = c.Send(ctx, &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "pkt_ping", Type: protocol.TypePing})
	pong := <-got
	fmt.Println(pong.Type, pong.ReplyTo)
	_ = c.Close(websocket.StatusNormalClosure, "done")
	fmt.Println(<-done)
	<-served
	// Output:
	// pong pkt_ping
	// <nil>
}
