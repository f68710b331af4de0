package mcp_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/mcp"
	"github.com/xconn/xconn/store"
)

// A host whose Agent is an Inbox, an MCP server in front of it, and an
// MCP client (here the Go SDK's, in memory; Claude Desktop or Cursor on
// stdio with srv.StdioTransport(os.Stdin, os.Stdout)) listing the tools.
// With no connector admitted yet, only the built-in tools are there.
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mcp-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	inbox := mcp.NewInbox(mcp.InboxOptions{})
	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: inbox, FilesDir: filepath.Join(dir, "files")})
	if err != nil {
		log.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)
	srv, err := mcp.New(ctx, mcp.Options{Host: h, Inbox: inbox, UserID: "me"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name)
	}
	// Output:
	// channel_sign_in
	// channel_sign_in_status
	// channel_sign_out
	// connector_channels_list
	// connector_message_send
	// messages_read
}
