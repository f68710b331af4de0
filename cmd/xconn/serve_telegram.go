package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connectors/telegram"
)

// telegramFlags are the flags of "serve telegram": the web chat's serving
// flags that apply to a connector without a web side, and the Bot API's.
type telegramFlags struct {
	connFlags
	apiURL string
	proxy  string
}

func newServeTelegramCmd() *cobra.Command {
	var f telegramFlags
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "Serve the Telegram connector (Base URL for xAgent; a bot in a chat)",
		Long: `Serve the Telegram connector (im.telegram) at the root of --listen, its Base URL
for xAgent. A user signs in with the telegram_bot_binding form: a bot token from
BotFather and the chat id the bot serves. State lives in <--data>/telegram
(SQLite) or --store. Where Telegram is blocked, reach it through --telegram-proxy
(http://, https://, socks5:// or socks5h://; HTTPS_PROXY and HTTP_PROXY are
honoured too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lock, log, err := f.start(cmd, telegram.CardID)
			if err != nil {
				return err
			}
			defer lock.Close()
			sdk, err := f.sdkOptions("telegram", log)
			if err != nil {
				return err
			}
			conn, err := telegram.New(telegram.Options{
				SDK:    sdk,
				APIURL: f.apiURL,
				Proxy:  f.proxy,
			})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			ln, err := f.listenChecked()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			api := f.apiURL
			if api == "" {
				api = telegram.DefaultAPIURL
			}
			fmt.Fprintf(out, "Telegram connector\n  Base URL:  http://%s\n  Bot API:   %s\n", serveDialable(ln.Addr()), api)
			return serveConnector(cmd, conn.Server(), ln, f.apiKey, nil)
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirTelegram, "data directory: SQLite database, file cache, keys, under telegram/",
		"absolute URL at which xAgent reaches the connector, for absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "telegram-api-url", envOr("XCONN_TELEGRAM_API_URL", telegram.DefaultAPIURL), "Bot API server: the public one, a self-hosted telegram-bot-api, or a fake for tests (env XCONN_TELEGRAM_API_URL)")
	fs.StringVar(&f.proxy, "telegram-proxy", os.Getenv("XCONN_TELEGRAM_PROXY"), "proxy for the Bot API: http://, https://, socks5:// or socks5h:// URL (default: HTTPS_PROXY/HTTP_PROXY) (env XCONN_TELEGRAM_PROXY)")
	return cmd
}
