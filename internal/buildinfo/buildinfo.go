// Package buildinfo holds the build metadata of the xconn binary and its
// connectors: version, git tag, git revision and build time. Release builds
// inject the values with -ldflags:
//
//	go build -ldflags "-X github.com/xconn/xconn/internal/buildinfo.version=0.1.0 \
//	  -X github.com/xconn/xconn/internal/buildinfo.gitTag=v0.1.0 \
//	  -X github.com/xconn/xconn/internal/buildinfo.gitRev=$(git rev-parse --short HEAD) \
//	  -X github.com/xconn/xconn/internal/buildinfo.buildTime=$(date -u +%y%m%d%H%M)" ./cmd/xconn
//
// A binary built without them (go run, go build, go test) falls back to the
// module and VCS data the Go toolchain embeds, so the values are never empty.
// The values are fixed at link time; Get is safe for concurrent use.
package buildinfo

import (
	"runtime/debug"
	"time"
)

// Set by -ldflags -X. They are strings because -X can only set strings; they
// are never written at run time.
var (
	version   string
	gitTag    string
	gitRev    string
	buildTime string
)

// Info is the build metadata. BuildTime uses the spec's compact form
// YYMMDDhhmm (UTC), as in the Card example "2607241200".
type Info struct {
	Version   string
	GitTag    string
	GitRev    string
	BuildTime string
}

// Get returns the build metadata of the running binary.
func Get() Info {
	in := Info{Version: version, GitTag: gitTag, GitRev: gitRev, BuildTime: buildTime}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.GitRev == "" && s.Value != "" {
					in.GitRev = short(s.Value)
				}
			case "vcs.time":
				if in.BuildTime == "" {
					if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
						in.BuildTime = t.UTC().Format("0601021504")
					}
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "0.0.0-dev"
	}
	if in.GitTag == "" {
		in.GitTag = "v" + in.Version
	}
	if in.GitRev == "" {
		in.GitRev = "unknown"
	}
	if in.BuildTime == "" {
		in.BuildTime = "0000000000"
	}
	return in
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
