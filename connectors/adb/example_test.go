package adb_test

import (
	"context"
	"fmt"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/adb"
)

// The Android connector on the default ADB server, served until ctx ends
// (xconn serve adb does this with flags).
func ExampleNew() {
	dir, err := os.MkdirTemp("", "adb-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := adb.New(adb.Options{
		SDK:     connector.Options{DataDir: dir, APIKey: "a-long-random-system-api-key"},
		ADBAddr: adb.DefaultADBAddr,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real program serves until SIGINT: c.Server().ListenAndServe(ctx, "127.0.0.1:8080")
	_ = c.Server().ListenAndServe(ctx, "127.0.0.1:0")
	fmt.Println(adb.CardID, adb.FlowBinding, c.ADBAddr())
	// Output: device.adb adb_device_binding 127.0.0.1:5037
}
