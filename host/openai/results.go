package openai

import "github.com/xconn/xconn/host"

// resultFiles returns the files a tool call returned, downloaded by the
// host, to give to the model.
func resultFiles(res *host.Result) []host.File {
	return nil
}
