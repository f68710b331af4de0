package host_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
)

// A model inside a conversation sees the connector's send tool without the
// channel argument; the built-in connector_message_send keeps it.
func ExampleScopeFunctions() {
	schema, _ := protocol.WithConnectorChannelIDInputSchema(json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	defs := []host.FunctionDef{{Name: "webchat_message_send", CardID: "im.webchat", Parameters: schema}}
	for _, d := range host.ScopeFunctions(defs) {
		fmt.Println(d.Name, d.ChannelScoped, string(d.Parameters))
	}
	// Output:
	// webchat_message_send true {"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}
}

// An Agent of one's own gives the model the scoped tools of the
// conversation and runs its calls with InConversation: the model writes
// {"text":"..."} and the host fills connector_channel_id with the channel
// the message came from. (Not run: it needs a host with a connector.)
func ExampleInConversation() {
	var h *host.Host // the host that calls the agent
	agent := host.AgentFunc(func(ctx context.Context, msg *host.UserMessage, reply host.ReplyStream) error {
		defs, err := h.Tools(ctx, msg.UserID, msg.SessionID)
		if err != nil {
			return err
		}
		tools, _ := host.ExportOpenAI(host.ScopeFunctions(defs)) // what the model sees
		_ = tools
		// ... the model answers with a call of webchat_message_send ...
		res, err := h.Invoke(ctx, msg.UserID, msg.SessionID, "webchat_message_send",
			json.RawMessage(`{"text":"proactive ping"}`), "call_1", host.InConversation(msg.UserChannelID))
		if err != nil {
			// A *protocol.Error: give the model its code and message as
			// the tool result (invalid_arguments for a channel it named
			// wrongly).
			return nil
		}
		_, err = reply.Final(ctx, "sent: "+string(res.ModelOutput))
		return err
	})
	_ = agent
}
