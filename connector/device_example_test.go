package connector_test

import (
	"context"
	"fmt"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

type lamp struct{ on bool }

// A device connector declares its observation tools ToolObserve and its
// control tools ToolAct, and reports what it observes of the device with
// SetDeviceState: the Descriptor follows, and calls on an offline device
// are refused with CodeDeviceOffline.
func ExampleToolMode() {
	dir, err := os.MkdirTemp("", "lamp")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := connector.New(connector.Options{DataDir: dir,
		Identity: connector.Identity{CardID: "device.lamp", Name: "Lamp", Provider: "lamp", TargetType: protocol.TargetDevice}})
	if err != nil {
		fmt.Println(err)
		return
	}
	type none struct{}
	type lampBinding struct{ Serial string }
	lamps, _ := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b lampBinding, _ connector.ClientReason) (*lamp, error) {
		return &lamp{}, nil // reach the lamp; on restore, check it is still there
	})
	_ = connector.AddTool(srv, "lamp_status", func(ctx context.Context, call *connector.Call, _ none) (bool, error) {
		l, err := lamps.Get(call.Channel)
		if err != nil {
			return false, err
		}
		return l.on, nil
	}, connector.ToolOptions{Description: "Is the lamp on?", Mode: connector.ToolObserve})
	_ = connector.AddTool(srv, "lamp_toggle", func(ctx context.Context, call *connector.Call, _ none) (bool, error) {
		l, err := lamps.Get(call.Channel)
		if err != nil {
			return false, err
		}
		if unreachable := false; unreachable {
			_ = call.Channel.SetDeviceState(ctx, connector.DeviceOffline, "the lamp is unplugged")
			return false, protocol.Errorf(connector.CodeDeviceOffline, "the lamp is unplugged")
		}
		l.on = !l.on
		return l.on, nil
	}, connector.ToolOptions{Description: "Switch the lamp.", Mode: connector.ToolAct})
	fmt.Println(connector.ToolObserve, connector.ToolAct)
	// Output: observe act
}
