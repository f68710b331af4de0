package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/slack"
)

// dataDirSlack is the default --data of "serve slack".
const dataDirSlack = "./xconn-slack-data"

// slackFlags are the flags of "serve slack": the serving flags of a
// connector without a web side, the Web API's root and the proxy.
type slackFlags struct {
	connFlags
	apiURL string
	proxy  string
}

func newServeSlackCmd() *cobra.Command {
	var f slackFlags
	cmd := &cobra.Command{
		Use:   "slack",
		Short: "Serve the Slack connector (Base URL for xAgent; an app's bot over Socket Mode)",
		Long: `Serve the Slack connector (im.slack) at the root of --listen, its Base URL for
xAgent. A user signs in with the slack_app_binding form: the app's app-level token
(xapp-, connections:write), its Bot User OAuth Token (xoxb-) and, optionally, the
one channel id it serves (empty: every DM and every mention of the bot). Messages
arrive over Socket Mode, so nothing has to be exposed to Slack. State lives in
<--data>/slack (SQLite) or --store. Reach Slack through --proxy (http://,
https://, socks5:// or socks5h://; HTTPS_PROXY and HTTP_PROXY are honoured too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.serve(cmd, slack.CardID, "slack", func(sdk connector.Options) (*connector.Server, error) {
				conn, err := slack.New(slack.Options{SDK: sdk, APIURL: f.apiURL, Proxy: f.proxy})
				if err != nil {
					return nil, err
				}
				return conn.Server(), nil
			}, func(base string) string {
				return fmt.Sprintf("Slack connector\n  Base URL:  %s\n  Web API:   %s\n", base, f.apiURL)
			})
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirSlack, "data directory: SQLite database, file cache, keys, under slack/",
		"absolute URL at which xAgent reaches the connector, for absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "slack-api-url", envOr("XCONN_SLACK_API_URL", slack.DefaultAPIURL), "Slack Web API root (Socket Mode's URL is what apps.connections.open there answers), or a fake for tests (env XCONN_SLACK_API_URL)")
	fs.StringVar(&f.proxy, "proxy", os.Getenv("XCONN_SLACK_PROXY"), "proxy for the Web API and Socket Mode: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_SLACK_PROXY)")
	return cmd
}
