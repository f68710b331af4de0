package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
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
	)
	strictUsage(root)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print build metadata",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine(connector.BuildInfo()))
			return nil
		},
	}
}

// versionLine words the build metadata. A binary built without VCS
// stamping (-buildvcs=false, a tree without .git) and without the -ldflags
// of a release build has no revision or build time: the line says so
// instead of printing placeholders.
func versionLine(in protocol.Build) string {
	if in.GitRev == "unknown" || in.BuildTime == "0000000000" {
		return fmt.Sprintf("xconn %s (tag %s; no revision or build time: built without VCS stamping; "+
			"set them with -ldflags \"-X github.com/xconn/xconn/internal/buildinfo.gitRev=... -X github.com/xconn/xconn/internal/buildinfo.buildTime=YYMMDDhhmm\")",
			in.Version, in.GitTag)
	}
	return fmt.Sprintf("xconn %s (tag %s, rev %s, built %s)", in.Version, in.GitTag, in.GitRev, in.BuildTime)
}
