package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connectors/adb"
)

// adbFlags are the flags of "serve adb": the shared serving flags and the
// ADB server's address.
type adbFlags struct {
	connFlags
	adbAddr string
}

func newServeADBCmd() *cobra.Command {
	var f adbFlags
	cmd := &cobra.Command{
		Use:   "adb",
		Short: "Serve the Android connector (Base URL for xAgent; devices of an ADB server)",
		Long: `Serve the Android connector (device.adb) at the root of --listen, its Base URL
for xAgent. A user signs in with the adb_device_binding form: the serial of a
device that "adb devices" lists on this machine (USB debugging enabled, the
RSA prompt accepted). The connector talks to the ADB server at --adb-addr
(start it with "adb start-server"); one channel per device. State lives in
<--data>/adb (SQLite) or --store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lock, log, err := f.start(cmd, adb.CardID)
			if err != nil {
				return err
			}
			defer lock.Close()
			sdk, err := f.sdkOptions("adb", log)
			if err != nil {
				return err
			}
			conn, err := adb.New(adb.Options{
				SDK:     sdk,
				ADBAddr: f.adbAddr,
			})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			ln, err := f.listenChecked()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Android connector\n  Base URL:  http://%s\n  ADB:       %s\n", serveDialable(ln.Addr()), conn.ADBAddr())
			return serveConnector(cmd, conn.Server(), ln, f.apiKey, nil)
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirADB, "data directory: SQLite database, screenshot cache, keys, under adb/",
		"absolute URL at which xAgent reaches the connector, for absolute screenshot download URLs (default: relative ones)")
	fs.StringVar(&f.adbAddr, "adb-addr", envOr("XCONN_ADB_ADDR", adb.DefaultADBAddr), "address of the ADB server, host:port (env XCONN_ADB_ADDR)")
	return cmd
}
