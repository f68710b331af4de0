package webchat_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// Serve the web chat connector on one listener: the Connector Server
// endpoints at the root (the Base URL for xAgent) and the chat pages under
// /webchat/.
func ExampleNew() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := "./xconn-data"
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "webchat.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	conn, err := webchat.New(webchat.Options{
		Store:     db,
		Delivery:  db,
		APIKey:    os.Getenv("XCONN_API_KEY"),
		PublicURL: "http://127.0.0.1:8080",
		DataDir:   filepath.Join(dir, "webchat-files"),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := conn.Start(ctx); err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: conn}
	go func() {
		<-ctx.Done()
		_ = conn.Close(context.Background()) // ends the event streams first
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
