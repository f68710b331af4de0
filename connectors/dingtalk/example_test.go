package dingtalk_test

import (
	"context"
	"fmt"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/dingtalk"
)

// The DingTalk connector with replies streamed into an AI card, served
// until ctx ends (xconn serve dingtalk does this with flags). Nothing is
// exposed to DingTalk: each signed-in app's Stream connection is opened
// from here.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "dingtalk-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := dingtalk.New(dingtalk.Options{
		SDK:            connector.Options{DataDir: dir, APIKey: "a-long-random-system-api-key"},
		CardTemplateID: "382e4302-551d-4880-bf29-a30acfab2e71.schema", // from the card platform
		CardContentKey: dingtalk.DefaultCardContentKey,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real program serves until SIGINT: c.Server().ListenAndServe(ctx, "127.0.0.1:8080")
	_ = c.Server().ListenAndServe(ctx, "127.0.0.1:0")
	fmt.Println(dingtalk.CardID, dingtalk.FlowApp, dingtalk.ToolSend)
	// Output:
	// im.dingtalk dingtalk_app_binding dingtalk_message_send
}
