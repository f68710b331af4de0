package xagent_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/xconn/xconn/conformance/xagent"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/store"
)

// Check an xAgent-side implementation: serve the scripted Connector, let
// the xAgent under test (here xconn's own host with its echo agent) admit
// it and sign a channel in with the form flow, wait for the script, and
// print the report's headline and summary.
func ExampleNewServer() {
	srv, err := xagent.NewServer(xagent.Options{APIKey: "example-key"})
	if err != nil {
		fmt.Println(err)
		return
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	// The xAgent under test.
	dir, _ := os.MkdirTemp("", "xagent-example")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	// AllowPrivateDownloads: the scripted server is on loopback, and the
	// file of M4 is on its other origin (localhost for 127.0.0.1).
	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "files"),
		AllowPrivateDownloads: true})
	if err != nil || h.Start(ctx) != nil {
		fmt.Println("host:", err)
		return
	}
	defer h.Close(context.Background())
	if _, err := h.Admit(ctx, hs.URL, "example-key"); err != nil {
		fmt.Println(err)
		return
	}
	s, err := h.Connect(ctx, "ann", xagent.CardID, xagent.FormFlow, map[string]string{"code": "1234"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := s.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}

	if err := srv.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	rep := srv.Report()
	fmt.Println(rep.Headline)
	fmt.Println(rep.Summary(), "ok:", rep.OK())
	fmt.Println("failed:", rep.Failed())
	// Output:
	// The script ran to its end.
	// 26 passed, 0 failed, 5 skipped ok: true
	// failed: []
}
