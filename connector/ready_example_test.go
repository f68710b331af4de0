package connector_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Serving a readiness probe beside the protocol endpoints: /readyz answers
// 503 until Start has run (and while the store does not answer), then 200.
func ExampleServer_Ready() {
	dir, _ := os.MkdirTemp("", "xconn-example-")
	defer os.RemoveAll(dir)
	srv, err := connector.New(connector.Options{DataDir: dir,
		Identity: connector.Identity{CardID: "im.room", Name: "Room", Provider: "room", TargetType: protocol.TargetIM}})
	if err != nil {
		log.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	_ = srv.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := srv.Ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	}))
	probe := func() {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	probe()
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	probe()
	_ = srv.Close(ctx)
	probe()
	// Output:
	// 503 connector: server not started
	// 200 ready
	// 503 connector: server closed
}
