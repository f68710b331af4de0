package adbhost_test

import (
	"context"
	"fmt"
	"time"

	"github.com/xconn/xconn/connectors/adb/adbhost"
	"github.com/xconn/xconn/connectors/adb/adbtest"
)

// List the devices of an ADB server and run one command on a usable one;
// every argument reaches the device's shell quoted.
func ExampleClient_Exec() {
	fake := adbtest.New() // a real server: adbhost.New(adbhost.DefaultAddr)
	fake.AddDevice(adbtest.Device{Serial: "emulator-5554", Model: "Pixel 7"})
	defer fake.Close()
	c, err := adbhost.New(fake.Start())
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	devices, err := c.Devices(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range devices {
		if !d.Usable() {
			continue
		}
		out, err := c.Exec(ctx, d.Serial, 1<<10, "getprop", "ro.product.model")
		fmt.Printf("%s %s %q %v\n", d.Serial, d.State, out, err)
	}
	fmt.Println(adbhost.CommandLine([]string{"input", "text", "it's"}))
	// Output:
	// emulator-5554 device "Pixel 7\n" <nil>
	// input text 'it'\''s'
}
