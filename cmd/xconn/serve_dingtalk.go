package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/dingtalk"
)

// dataDirDingtalk is the default --data of "serve dingtalk".
const dataDirDingtalk = "./xconn-dingtalk-data"

// dingtalkFlags are the flags of "serve dingtalk": the serving flags of a
// connector without a web side, DingTalk's two API hosts, the proxy and
// the AI card that streamed replies go into.
type dingtalkFlags struct {
	connFlags
	apiURL       string
	oapiURL      string
	proxy        string
	cardTemplate string
	cardKey      string
}

func newServeDingtalkCmd() *cobra.Command {
	var f dingtalkFlags
	cmd := &cobra.Command{
		Use:   "dingtalk",
		Short: "Serve the DingTalk (钉钉) connector (Base URL for xAgent; an app robot in Stream mode)",
		Long: `Serve the DingTalk connector (im.dingtalk) at the root of --listen, its Base URL
for xAgent. A user signs in with the form dingtalk_app_binding: the Client ID
(AppKey) and Client Secret of a DingTalk app whose robot receives messages in
Stream mode, and the robot code when it differs from the Client ID. The
connector holds one Stream connection per app (outbound WebSocket): nothing
needs to be exposed to DingTalk.

Replies are sent once, complete, unless --dingtalk-card-template names an AI
card template: then they stream into a card updated in place, through its
--dingtalk-card-key variable.

State lives in <--data>/dingtalk (SQLite) or --store. DingTalk does not push a
bot message again: messages sent while the connector is down are lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.serve(cmd, dingtalk.CardID, "dingtalk", func(sdk connector.Options) (*connector.Server, error) {
				conn, err := dingtalk.New(dingtalk.Options{SDK: sdk, APIURL: f.apiURL, OAPIURL: f.oapiURL, Proxy: f.proxy,
					CardTemplateID: f.cardTemplate, CardContentKey: f.cardKey})
				if err != nil {
					return nil, err
				}
				return conn.Server(), nil
			}, func(base string) string {
				replies := "one message each (no --dingtalk-card-template)"
				if f.cardTemplate != "" {
					replies = "streamed into AI card " + f.cardTemplate + " (variable " + f.cardKey + ")"
				}
				return fmt.Sprintf("DingTalk connector\n  Base URL:   %s\n  Open API:   %s\n  Old API:    %s\n  Replies:    %s\n",
					base, f.apiURL, f.oapiURL, replies)
			})
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirDingtalk, "data directory: SQLite database, file cache, keys, under dingtalk/",
		"absolute URL at which xAgent reaches the connector, for absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "dingtalk-api-url", envOr("XCONN_DINGTALK_API_URL", dingtalk.DefaultAPIURL), "DingTalk Open Platform (access tokens, Stream registration, robot and card APIs), or a fake for tests (env XCONN_DINGTALK_API_URL)")
	fs.StringVar(&f.oapiURL, "dingtalk-oapi-url", envOr("XCONN_DINGTALK_OAPI_URL", dingtalk.DefaultOAPIURL), "DingTalk's old API host (media upload; session webhooks are used only on it), or a fake for tests (env XCONN_DINGTALK_OAPI_URL)")
	fs.StringVar(&f.proxy, "proxy", os.Getenv("XCONN_DINGTALK_PROXY"), "proxy for every call to DingTalk and the Stream connection: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_DINGTALK_PROXY)")
	fs.StringVar(&f.cardTemplate, "dingtalk-card-template", os.Getenv("XCONN_DINGTALK_CARD_TEMPLATE"), "AI card template id (card platform) to stream replies into; empty sends each reply once (env XCONN_DINGTALK_CARD_TEMPLATE)")
	fs.StringVar(&f.cardKey, "dingtalk-card-key", envOr("XCONN_DINGTALK_CARD_KEY", dingtalk.DefaultCardContentKey), "the card template's streamed variable (env XCONN_DINGTALK_CARD_KEY)")
	return cmd
}
