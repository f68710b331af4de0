// Command fakefeishu runs the fake Feishu Open Platform of package
// feishutest on its own, for trying "xconn serve feishu" by hand:
//
//	go run ./testrig/cmd/fakefeishu --listen 127.0.0.1:8082 --app cli_fake0123456789 --secret S
//	xconn serve feishu --feishu-api-url http://127.0.0.1:8082 --feishu-accounts-url http://127.0.0.1:8082
//
// The person writes to the bot in a direct chat (over the app's long
// connection) with
//
//	curl -d 'hello' 'http://127.0.0.1:8082/_fake/send?app=cli_fake0123456789&chat_id=oc_alice'
//
// what the bot posted there (with each message's edit count) is listed by
//
//	curl 'http://127.0.0.1:8082/_fake/sent?chat_id=oc_alice'
//
// With --greet TEXT the person writes TEXT in chat oc_alice each time
// the app's long connection comes up, so that the bot has a chat to
// answer in (a Feishu bot has none until someone writes to it): this is
// what lets "xconn check" run its outbound checks.
//
// A pending QR app registration (feishu_qr_create_app) is approved,
// creating the app, with
//
//	curl -X POST 'http://127.0.0.1:8082/_fake/approve?app=cli_new0123456789&secret=S2'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xconn/xconn/connectors/feishu/feishutest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to listen on")
	app := flag.String("app", "cli_fake0123456789", "the app's App ID")
	secret := flag.String("secret", "fake-app-secret-0123456789", "the app's App Secret")
	greet := flag.String("greet", "", "text the person writes in chat oc_alice whenever the app's long connection comes up")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *app, *secret, *greet); err != nil {
		fmt.Fprintln(os.Stderr, "fakefeishu:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, listen, app, secret, greet string) error {
	fake := feishutest.New()
	fake.AddApp(app, secret)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", fake)
	mux.HandleFunc("POST /_fake/send", func(w http.ResponseWriter, r *http.Request) {
		text, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		sctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		id, err := fake.SendText(sctx, r.URL.Query().Get("app"), r.URL.Query().Get("chat_id"), string(text))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, id)
	})
	mux.HandleFunc("GET /_fake/sent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		sent := fake.Sent(r.URL.Query().Get("chat_id"))
		if sent == nil {
			sent = []feishutest.Sent{}
		}
		_ = json.NewEncoder(w).Encode(sent)
	})
	mux.HandleFunc("POST /_fake/approve", func(w http.ResponseWriter, r *http.Request) {
		if !fake.ApproveRegistration(r.URL.Query().Get("app"), r.URL.Query().Get("secret")) {
			http.Error(w, "no registration pending", http.StatusConflict)
		}
	})
	base := fake.StartOn(ln, mux)
	fmt.Printf("fake Feishu at %s (app %s)\n", base, app)
	done := make(chan struct{})
	go func() { defer close(done); greeter(ctx, fake, app, greet) }()
	<-ctx.Done()
	<-done
	fake.Close()
	return nil
}

// greeter writes text in chat oc_alice whenever app's long connection
// comes up, until ctx ends.
func greeter(ctx context.Context, fake *feishutest.Server, app, text string) {
	if text == "" {
		return
	}
	up := false
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := fake.Connected(app)
		if now && !up {
			sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			if _, err := fake.SendText(sctx, app, "oc_alice", text); err != nil {
				fmt.Fprintln(os.Stderr, "fakefeishu: greet:", err)
			}
			cancel()
		}
		up = now
	}
}
