package main

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/wecom"
)

// dataDirWecom is the default --data of "serve wecom".
const dataDirWecom = "./xconn-wecom-data"

// wecomFlags are the flags of "serve wecom": the serving flags of a
// connector without a web side, WeCom's hosts, the proxy and the
// callbacks' replay window.
type wecomFlags struct {
	connFlags
	apiURL       string
	wsURL        string
	proxy        string
	replayWindow time.Duration
	markdown     bool
}

func newServeWecomCmd() *cobra.Command {
	var f wecomFlags
	cmd := &cobra.Command{
		Use:   "wecom",
		Short: "Serve the WeCom (企业微信) connector (Base URL for xAgent; an application or a robot)",
		Long: `Serve the WeCom connector (im.wecom) at the root of --listen, its Base URL for
xAgent. A user signs in with one of two forms:

  wecom_app_binding  a self-built application in callback mode: corp_id,
                     agent_id, secret, and the token and encoding_aes_key of its
                     API message receiving. WeCom POSTs messages to
                     <--public-url>` + wecom.CallbackPrefix + `<corp_id>/<agent_id>, served on --listen:
                     expose it over HTTPS and enter it as the application's URL.
  wecom_bot_binding  an intelligent robot over its long connection: bot_id and
                     secret; nothing to expose.

State lives in <--data>/wecom (SQLite) or --store. WeCom refuses server API calls
from an address outside the application's trusted IPs: use --proxy for a fixed
egress address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.serve(cmd, wecom.CardID, "wecom", func(sdk connector.Options) (*connector.Server, error) {
				conn, err := wecom.New(wecom.Options{SDK: sdk, APIURL: f.apiURL, WSURL: f.wsURL, Proxy: f.proxy, ReplayWindow: f.replayWindow, AppMarkdown: f.markdown})
				if err != nil {
					return nil, err
				}
				return conn.Server(), nil
			}, func(base string) string {
				return fmt.Sprintf("WeCom connector\n  Base URL:   %s\n  Server API: %s\n  Robots:     %s\n  Callbacks:  %s%s<corp_id>/<agent_id>\n",
					base, f.apiURL, f.wsURL, cmp.Or(f.publicURL, base), wecom.CallbackPrefix)
			})
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirWecom, "data directory: SQLite database, file cache, keys, under wecom/",
		"absolute HTTPS URL at which xAgent and WeCom reach the connector: the applications' callback URLs and absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "wecom-api-url", envOr("XCONN_WECOM_API_URL", wecom.DefaultAPIURL), "WeCom server API, or a fake for tests (env XCONN_WECOM_API_URL)")
	fs.StringVar(&f.wsURL, "wecom-ws-url", envOr("XCONN_WECOM_WS_URL", wecom.DefaultWSURL), "intelligent robots' long connection, or a fake for tests (env XCONN_WECOM_WS_URL)")
	fs.StringVar(&f.proxy, "proxy", os.Getenv("XCONN_WECOM_PROXY"), "proxy for every call to WeCom: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_WECOM_PROXY)")
	window := wecom.DefaultReplayWindow
	if v, err := time.ParseDuration(os.Getenv("XCONN_WECOM_REPLAY_WINDOW")); err == nil && v > 0 {
		window = v
	}
	fs.DurationVar(&f.replayWindow, "wecom-replay-window", window, "how far a callback's timestamp may be from now; a nonce is remembered as long (env XCONN_WECOM_REPLAY_WINDOW)")
	fs.BoolVar(&f.markdown, "wecom-markdown", os.Getenv("XCONN_WECOM_MARKDOWN") == "1", "send an application's text replies as markdown (shown by the WeCom client only) (env XCONN_WECOM_MARKDOWN=1)")
	return cmd
}
