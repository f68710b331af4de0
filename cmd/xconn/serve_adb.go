package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
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
			var conn *adb.Connector
			return f.serve(cmd, adb.CardID, "adb", func(sdk connector.Options) (*connector.Server, error) {
				var err error
				if conn, err = adb.New(adb.Options{SDK: sdk, ADBAddr: f.adbAddr}); err != nil {
					return nil, err
				}
				return conn.Server(), nil
			}, func(base string) string {
				return fmt.Sprintf("Android connector\n  Base URL:  %s\n  ADB:       %s\n", base, conn.ADBAddr())
			})
		},
	}
	fs := cmd.Flags()
	f.register(fs, dataDirADB, "data directory: SQLite database, screenshot cache, keys, under adb/",
		"absolute URL at which xAgent reaches the connector, for absolute screenshot download URLs (default: relative ones)")
	fs.StringVar(&f.adbAddr, "adb-addr", envOr("XCONN_ADB_ADDR", adb.DefaultADBAddr), "address of the ADB server, host:port (env XCONN_ADB_ADDR)")
	return cmd
}
