package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/store"
)

// serveWebchatForTest serves an in-process web chat connector with apiKey on a
// loopback httptest server (its store and files in dir) and returns the
// server; everything is closed when the test ends.
func serveWebchatForTest(t *testing.T, dir, apiKey string) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "c.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: db, APIKey: apiKey, DataDir: filepath.Join(dir, "files")},
		PublicURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Server().Close(ctx) })
	srv.Config.Handler = conn.Server()
	return srv
}
