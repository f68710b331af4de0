package main

import (
	"cmp"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/discord"
)

// dataDirDiscord is the default --data of "serve discord".
const dataDirDiscord = "./xconn-discord-data"

// discordFlags are the flags of "serve discord": the serving flags of a
// connector without a web side, Discord's REST API and Gateway, and the
// proxy.
type discordFlags struct {
	connFlags
	apiURL     string
	gatewayURL string
	proxy      string
}

func newServeDiscordCmd() *cobra.Command {
	var f discordFlags
	cmd := &cobra.Command{
		Use:   "discord",
		Short: "Serve the Discord connector (Base URL for xAgent; a bot in a channel, over the Gateway)",
		Long: `Serve the Discord connector (im.discord) at the root of --listen, its Base URL for
xAgent. A user signs in with the discord_bot_binding form: the bot token from the
Developer Portal (with the Message Content intent switched on) and the id of the
guild channel, thread or DM the bot serves. Messages arrive over the Discord
Gateway, a WebSocket the connector opens: nothing needs a public URL. State lives
in <--data>/discord (SQLite) or --store. Where Discord is blocked, reach it through
--proxy (http://, https://, socks5:// or socks5h://; HTTPS_PROXY and HTTP_PROXY
are honoured too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.serve(cmd, discord.CardID, "discord", func(sdk connector.Options) (*connector.Server, error) {
				conn, err := discord.New(discord.Options{SDK: sdk, APIURL: f.apiURL, GatewayURL: f.gatewayURL, Proxy: f.proxy})
				if err != nil {
					return nil, err
				}
				return conn.Server(), nil
			}, func(base string) string {
				return fmt.Sprintf("Discord connector\n  Base URL:  %s\n  REST API:  %s\n  Gateway:   %s\n",
					base, cmp.Or(f.apiURL, discord.DefaultAPIURL), cmp.Or(f.gatewayURL, "the one GET /gateway names"))
			})
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirDiscord, "data directory: SQLite database, file cache, keys, under discord/",
		"absolute URL at which xAgent reaches the connector, for absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "discord-api-url", envOr("XCONN_DISCORD_API_URL", discord.DefaultAPIURL), "Discord REST API (without /v10), a proxy in front of it, or a fake for tests (env XCONN_DISCORD_API_URL)")
	fs.StringVar(&f.gatewayURL, "discord-gateway-url", os.Getenv("XCONN_DISCORD_GATEWAY_URL"), "Gateway WebSocket URL (ws:// or wss://) instead of the one the REST API names (env XCONN_DISCORD_GATEWAY_URL)")
	fs.StringVar(&f.proxy, "proxy", os.Getenv("XCONN_DISCORD_PROXY"), "proxy for REST, the Gateway and attachments: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_DISCORD_PROXY)")
	return cmd
}
