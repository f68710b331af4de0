// Command buildinfo prints connector.BuildInfo as JSON; the blocks test builds
// it with -ldflags -X to check the documented variable paths.
package main

import (
	"encoding/json"
	"os"

	"github.com/xconn/xconn/connector"
)

func main() {
	_ = json.NewEncoder(os.Stdout).Encode(connector.BuildInfo())
}
