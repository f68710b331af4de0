package openai

import (
	"encoding/json"

	"github.com/xconn/xconn/host"
)

// resultFiles returns the files a tool call returned, downloaded by the
// host, to give to the model (images as image input, others as notes).
func resultFiles(res *host.Result) []host.File {
	return res.Files
}

// modelOutput is the result the model may see: the host's ModelOutput
// (the connector's file references replaced by the host's), else Output.
func modelOutput(res *host.Result) json.RawMessage {
	if len(res.ModelOutput) > 0 {
		return res.ModelOutput
	}
	return res.Output
}
