package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envAllowPrivateDownloads is the environment equivalent of
// --allow-private-downloads.
const envAllowPrivateDownloads = "XCONN_ALLOW_PRIVATE_DOWNLOADS"

// privateDownloadsFlag is --allow-private-downloads of xconn host and xconn
// demo: host.Options.AllowPrivateDownloads.
type privateDownloadsFlag struct{ allow bool }

func (p *privateDownloadsFlag) register(fs *pflag.FlagSet) {
	fs.BoolVar(&p.allow, "allow-private-downloads", false,
		"let a connector's download_url of another origin than its Base URL reach loopback, private, unique-local, link-local and CGNAT addresses "+
			"(refused by default after DNS resolution and on every redirect; cloud metadata addresses stay refused) (env "+envAllowPrivateDownloads+")")
}

// resolve applies the environment when the flag was not given; a value
// that is not a boolean is a usage error.
func (p *privateDownloadsFlag) resolve(cmd *cobra.Command) error {
	if cmd.Flags().Changed("allow-private-downloads") {
		return nil
	}
	v := os.Getenv(envAllowPrivateDownloads)
	if v == "" {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return usageError(fmt.Errorf("%s=%q: want true or false", envAllowPrivateDownloads, v))
	}
	p.allow = b
	return nil
}
