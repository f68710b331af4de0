package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connectors/feishu"
)

// feishuFlags are the flags of "serve feishu": the serving flags that
// apply to a connector without a web side, the Feishu hosts and how
// events arrive.
type feishuFlags struct {
	connFlags
	apiURL      string
	accountsURL string
	events      string
	verifyToken string
	encryptKey  string
}

func newServeFeishuCmd() *cobra.Command {
	var f feishuFlags
	cmd := &cobra.Command{
		Use:   "feishu",
		Short: "Serve the Feishu (Lark) connector (Base URL for xAgent; a bot app in chats)",
		Long: `Serve the Feishu connector (im.feishu) at the root of --listen, its Base URL
for xAgent. A user signs in with the feishu_app_binding form (the App ID and App
Secret of a self-built app with the bot capability), or with the
feishu_qr_create_app QR flow, which creates such an app by scanning a code in
the Feishu app. State lives in <--data>/feishu (SQLite) or --store.

Events arrive over each app's long connection (--feishu-events longconn, the
default: nothing to expose), or, with --feishu-events webhook, as POSTs to
<public URL>` + feishu.WebhookPath + ` (set that URL as the app's event request URL,
with its Verification Token and Encrypt Key in the flags below).

For Lark instead of Feishu, use --feishu-api-url ` + feishu.LarkAPIURL + `
and --feishu-accounts-url ` + feishu.LarkAccountsURL + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lock, log, err := f.start(cmd, feishu.CardID)
			if err != nil {
				return err
			}
			defer lock.Close()
			sdk, err := f.sdkOptions("feishu", log)
			if err != nil {
				return err
			}
			conn, err := feishu.New(feishu.Options{
				SDK:               sdk,
				APIURL:            f.apiURL,
				AccountsURL:       f.accountsURL,
				Events:            f.events,
				VerificationToken: f.verifyToken,
				EncryptKey:        f.encryptKey,
			})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			ln, err := f.listenChecked()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			base := "http://" + serveDialable(ln.Addr())
			events := "long connection per app"
			if f.events == feishu.EventsWebhook {
				pub := base
				if f.publicURL != "" {
					pub = f.publicURL
				}
				events = "webhook at " + pub + feishu.WebhookPath
			}
			fmt.Fprintf(out, "Feishu connector\n  Base URL:  %s\n  Open API:  %s\n  Accounts:  %s\n  Events:    %s\n",
				base, f.apiURL, f.accountsURL, events)
			return serveConnector(cmd, conn.Server(), ln, f.apiKey, nil)
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirFeishu, "data directory: SQLite database, file cache, keys, under feishu/",
		"absolute URL at which xAgent (and, in webhook mode, Feishu) reaches the connector, for absolute file download URLs (default: relative ones)")
	fs.StringVar(&f.apiURL, "feishu-api-url", envOr("XCONN_FEISHU_API_URL", feishu.DefaultAPIURL), "Feishu Open Platform: "+feishu.DefaultAPIURL+", Lark "+feishu.LarkAPIURL+", or a fake for tests (env XCONN_FEISHU_API_URL)")
	fs.StringVar(&f.accountsURL, "feishu-accounts-url", envOr("XCONN_FEISHU_ACCOUNTS_URL", feishu.DefaultAccountsURL), "accounts host of the QR app registration: "+feishu.DefaultAccountsURL+", Lark "+feishu.LarkAccountsURL+" (env XCONN_FEISHU_ACCOUNTS_URL)")
	fs.StringVar(&f.events, "feishu-events", envOr("XCONN_FEISHU_EVENTS", feishu.EventsLongConn), "how events arrive: longconn (each app's long connection) or webhook (POSTs to "+feishu.WebhookPath+") (env XCONN_FEISHU_EVENTS)")
	fs.StringVar(&f.verifyToken, "feishu-verification-token", os.Getenv("XCONN_FEISHU_VERIFICATION_TOKEN"), "webhook mode: the app's Verification Token; events with another token are refused (env XCONN_FEISHU_VERIFICATION_TOKEN)")
	fs.StringVar(&f.encryptKey, "feishu-encrypt-key", os.Getenv("XCONN_FEISHU_ENCRYPT_KEY"), "webhook mode: the app's Encrypt Key, to decrypt events and check X-Lark-Signature (env XCONN_FEISHU_ENCRYPT_KEY)")
	return cmd
}
