package main

import (
	"github.com/spf13/cobra"
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
		newMCPCmd(),
		newCheckCmd(),
		newValidateCmd(),
		newBenchCmd(),
		newChaosCmd(),
		newVersionCmd(),
		newProbeCmd(),
	)
	strictUsage(root)
	return root
}
