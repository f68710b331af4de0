package webchat_test

import (
	"context"
	"log"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
)

// Serve the web chat connector on one listener: the Connector Server
// endpoints at the root (the Base URL for xAgent) and the chat pages under
// /webchat/. State lives in ./xconn-data (SQLite, keys, file cache);
// Ctrl-C ends the browsers' event streams, then the connector.
func ExampleNew() {
	conn, err := webchat.New(webchat.Options{
		SDK:       connector.Options{DataDir: "./xconn-data", APIKey: os.Getenv("XCONN_API_KEY")},
		PublicURL: "http://127.0.0.1:8080",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := conn.Server().ListenAndServe(context.Background(), "127.0.0.1:8080"); err != nil {
		log.Fatal(err)
	}
}
