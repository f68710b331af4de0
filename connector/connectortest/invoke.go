package connectortest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// Invoke calls tool toolID on channel as a host does for a model's function
// call and decodes the result into Out. args is the model's argument object:
// a struct or map (encoded with encoding/json), a json.RawMessage, or nil
// for {}; connector_channel_id is added to it when absent, as the tool's
// schema requires. A refusal or failure the connector reports (unknown_tool,
// connection_not_authenticated, invalid_arguments, tool_timeout,
// tool_invoke_failed, ...) is a *protocol.Error.
func Invoke[Out any](ctx context.Context, c *Client, channel, toolID string, args any) (Out, error) {
	var out Out
	raw, err := c.InvokeRaw(ctx, channel, toolID, args, "")
	if err != nil {
		return out, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, fmt.Errorf("connectortest: %s result: %w", toolID, err)
		}
	}
	return out, nil
}

// InvokeRaw is [Invoke] returning the raw result. toolCallID, when not "",
// travels as context.tool_call_id: a side-effecting tool called twice with
// the same id and arguments runs once and answers the same result.
func (c *Client) InvokeRaw(ctx context.Context, channel, toolID string, args any, toolCallID string) (json.RawMessage, error) {
	arguments, err := toolArgs(channel, args)
	if err != nil {
		return nil, err
	}
	p := protocol.ToolInvokePayload{ToolID: toolID, Arguments: arguments}
	if toolCallID != "" {
		p.Context = &protocol.ToolContext{ToolCallID: toolCallID}
	}
	env, err := c.Request(ctx, protocol.TypeToolInvoke, channel, p)
	if err != nil {
		return nil, err
	}
	if err := AckError(env); err != nil {
		return nil, err
	}
	if env.Type != protocol.TypeToolInvokeAck {
		return nil, fmt.Errorf("connectortest: %s answered with %s", toolID, env.Type)
	}
	var ack protocol.ToolInvokeAckPayload
	if err := env.DecodePayload(&ack); err != nil {
		return nil, fmt.Errorf("connectortest: %s ack: %w", toolID, err)
	}
	return ack.Result, nil
}

// toolArgs returns args as a JSON object carrying connector_channel_id.
func toolArgs(channel string, args any) (json.RawMessage, error) {
	var b []byte
	switch a := args.(type) {
	case nil:
		b = []byte(`{}`)
	case json.RawMessage:
		b = a
	default:
		var err error
		if b, err = json.Marshal(a); err != nil {
			return nil, fmt.Errorf("connectortest: tool arguments: %w", err)
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("connectortest: tool arguments must be a JSON object, got %.40s", b)
	}
	if _, ok := m["connector_channel_id"]; !ok {
		m["connector_channel_id"], _ = json.Marshal(channel)
	}
	return json.Marshal(m)
}
