// Command fakeadb runs the fake ADB server of package adbtest on its own,
// for trying "xconn serve adb" by hand without a phone:
//
//	go run ./testrig/cmd/fakeadb --listen 127.0.0.1:5038 --serial emulator-5554
//	xconn serve adb --adb-addr 127.0.0.1:5038
//	xconn host http://127.0.0.1:8080 --auth-flow adb_device_binding --auth-input serial=emulator-5554 \
//	    --invoke android_screenshot --args '{}'
//
// --unauthorized lists one more device, "R58UNAUTH01", that has not
// accepted the RSA prompt, to see the sign-in refuse it. The fake speaks
// the ADB host protocol, so "adb -P 5038 devices" lists its devices too.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/xconn/xconn/connectors/adb/adbtest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:5037", "address to listen on (the ADB server's default is 127.0.0.1:5037)")
	serial := flag.String("serial", "emulator-5554", "the serial of the fake device")
	model := flag.String("model", "Pixel 7", "the device's model")
	unauthorized := flag.Bool("unauthorized", false, "also list an unauthorised device R58UNAUTH01")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fake := adbtest.New()
	fake.AddDevice(adbtest.Device{Serial: *serial, Model: *model})
	if *unauthorized {
		fake.AddDevice(adbtest.Device{Serial: "R58UNAUTH01", State: "unauthorized"})
	}
	addr, err := fake.Listen(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeadb:", err)
		os.Exit(1)
	}
	fmt.Printf("fake ADB server at %s (device %s)\n", addr, *serial)
	<-ctx.Done()
	fake.Close()
}
