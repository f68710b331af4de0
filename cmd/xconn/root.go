package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "xconn",
		Short:         "Toolkit for the xAgent Connector protocol 3.0",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newDemoCmd(),
		newServeCmd(),
		newHostCmd(),
		newCheckCmd(),
		newValidateCmd(),
		newBenchCmd(),
		newChaosCmd(),
		newVersionCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print build metadata",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := connector.BuildInfo()
			fmt.Fprintf(cmd.OutOrStdout(), "xconn %s (tag %s, rev %s, built %s)\n", in.Version, in.GitTag, in.GitRev, in.BuildTime)
			return nil
		},
	}
}
