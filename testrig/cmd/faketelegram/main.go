// Command faketelegram runs the fake Telegram Bot API of package
// telegramtest on its own, for trying "xconn serve telegram" by hand:
//
//	go run ./testrig/cmd/faketelegram --listen 127.0.0.1:8081 --token T --chat 424242
//	xconn serve telegram --telegram-api-url http://127.0.0.1:8081
//
// The person in the chat writes with
//
//	curl -d 'hello' 'http://127.0.0.1:8081/_fake/send?token=T&chat_id=424242'
//
// and what the bot posted there is listed by
//
//	curl 'http://127.0.0.1:8081/_fake/sent?chat_id=424242'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xconn/xconn/connectors/telegram/telegramtest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	token := flag.String("token", "123456:fake-bot-token-for-xconn", "the bot's token")
	chat := flag.Int64("chat", 424242, "the chat's id")
	username := flag.String("bot", "xconn_fake_bot", "the bot's username")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *token, *chat, *username); err != nil {
		fmt.Fprintln(os.Stderr, "faketelegram:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, listen, token string, chat int64, username string) error {
	fake := telegramtest.New()
	fake.AddBot(token, telegramtest.Bot{ID: 1000001, Username: username, FirstName: "Fake Bot"})
	fake.AddChat(telegramtest.Chat{ID: chat, FirstName: "You"})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Printf("fake Bot API at http://%s (chat %d)\n", ln.Addr(), chat)
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fake.Close() // ends the long polls
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if e := <-done; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	return err
}
