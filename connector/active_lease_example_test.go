package connector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/store"
)

// Two processes on one store (PostgreSQL in production; SQLite here):
// the first to hold the lease serves, the other waits in WaitActive as a
// hot standby and takes over within 1.25×ttl of the active one's end.
func ExampleWaitActive() {
	dir, _ := os.MkdirTemp("", "lease-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "x.db"), store.Options{DataDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	active, err := connector.WaitActive(ctx, st, "serve:im.webchat", "process-a", 4*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("active:", active.Holder())
	// ... start the connector; stop serving when active.Lost() is closed ...

	standby := make(chan string)
	go func() {
		l, err := connector.WaitActive(ctx, st, "serve:im.webchat", "process-b", 4*time.Second)
		if err != nil {
			standby <- err.Error()
			return
		}
		_ = l.Release(ctx)
		standby <- "active: " + l.Holder()
	}()
	_ = active.Release(ctx) // a clean stop hands over within ttl/4
	fmt.Println(<-standby)
	// Output:
	// active: process-a
	// active: process-b
}
