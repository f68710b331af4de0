// Command wechatfake runs the fake iLink bot server of package wechattest
// on its own, for trying the WeChat connector by hand:
//
//	go run ./connectors/wechat/wechattest/wechatfake --listen 127.0.0.1:9090
//	xconn serve wechat --wechat-api-url http://127.0.0.1:9090 --wechat-cdn-url http://127.0.0.1:9090/c2c
//
// Opening a QR code's URL signs in; POST /fake/inject {"from":"u_1","text":"hi"}
// sends the bot a message; GET /fake/sent lists what the bot sent.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xconn/xconn/connectors/wechat/wechattest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9090", "address of the fake API host (the CDN is under /c2c)")
	longPoll := flag.Duration("long-poll", 5*time.Second, "how long getupdates holds a request")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := wechattest.Listen(*listen, wechattest.Options{LongPoll: *longPoll})
	if err != nil {
		fmt.Fprintln(os.Stderr, "wechatfake:", err)
		os.Exit(1)
	}
	fmt.Printf("fake iLink API: %s\nfake CDN:       %s\nredirect host:  %s\n", s.URL, s.CDNURL, s.RedirectHost)
	<-ctx.Done()
	s.Close()
}
