package wecom_test

import (
	"context"
	"fmt"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/wecom"
)

// The WeCom connector with both modes, served until ctx ends (xconn serve
// wecom does this with flags). WeCom posts an application's callbacks to
// the public URL + CallbackPrefix + "<corp_id>/<agent_id>".
func ExampleNew() {
	dir, err := os.MkdirTemp("", "wecom-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := wecom.New(wecom.Options{
		SDK:          connector.Options{DataDir: dir, APIKey: "a-long-random-system-api-key", PublicURL: "https://bot.example.com"},
		ReplayWindow: wecom.DefaultReplayWindow,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real program serves until SIGINT: c.Server().ListenAndServe(ctx, "127.0.0.1:8080")
	_ = c.Server().ListenAndServe(ctx, "127.0.0.1:0")
	fmt.Println(wecom.CardID, wecom.FlowApp, wecom.FlowBot)
	fmt.Println("https://bot.example.com" + wecom.CallbackPrefix + "ww1234567890abcdef/1000002")
	// Output:
	// im.wecom wecom_app_binding wecom_bot_binding
	// https://bot.example.com/wecom/callback/ww1234567890abcdef/1000002
}
