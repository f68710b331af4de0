package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print build metadata",
		Long: `Print the build metadata: version, git tag, revision and build time, set
at link time by a release build (-ldflags, or the Dockerfile's VERSION,
COMMIT and DATE build arguments) and otherwise taken from the module and
VCS data the Go toolchain embeds. With --json: one JSON object
{"version", "git_tag", "commit", "date", "build_time", "go", "os", "arch"}
where date is RFC 3339 (empty when unknown) and build_time the Card's
YYMMDDhhmm form.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := connector.BuildInfo()
			if !asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), versionLine(in))
				return nil
			}
			b, err := json.Marshal(versionInfoOf(in))
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("encode: %w", err)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the metadata as one JSON object")
	return cmd
}

// versionInfo is the JSON of "xconn version --json".
type versionInfo struct {
	Version   string `json:"version"`
	GitTag    string `json:"git_tag"`
	Commit    string `json:"commit"`     // "" when unknown
	Date      string `json:"date"`       // RFC 3339, "" when unknown
	BuildTime string `json:"build_time"` // YYMMDDhhmm, "" when unknown
	Go        string `json:"go"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// versionInfoOf turns the build metadata into versionInfo: buildinfo's
// placeholders for unknown values become empty strings.
func versionInfoOf(in protocol.Build) versionInfo {
	v := versionInfo{Version: in.Version, GitTag: in.GitTag, Commit: in.GitRev, BuildTime: in.BuildTime,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if v.Commit == "unknown" {
		v.Commit = ""
	}
	if v.BuildTime == "0000000000" {
		v.BuildTime = ""
	}
	if t, err := time.Parse("0601021504", v.BuildTime); err == nil {
		v.Date = t.UTC().Format(time.RFC3339)
	}
	return v
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
