package discord_test

import (
	"context"
	"fmt"
	"os"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/discord"
)

// The Discord connector, served until ctx ends (xconn serve discord does
// this with flags). It needs no public URL: it opens the Gateway itself
// once a channel signs in with a bot token and a channel id.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "discord-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c, err := discord.New(discord.Options{
		SDK: connector.Options{DataDir: dir, APIKey: "a-long-random-system-api-key"},
		// APIURL and GatewayURL stay empty for Discord itself; Proxy
		// reaches it where it is blocked.
		Proxy: "socks5h://127.0.0.1:1080",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real program serves until SIGINT: c.Server().ListenAndServe(ctx, "127.0.0.1:8080")
	_ = c.Server().ListenAndServe(ctx, "127.0.0.1:0")
	fmt.Println(discord.CardID, discord.FlowBot, discord.ToolSend)
	// Output:
	// im.discord discord_bot_binding discord_message_send
}
