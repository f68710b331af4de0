package protocol_test

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xconn/xconn/protocol"
)

// Build a Card in code, inject the reserved channel argument, and validate it.
func ExampleValidateCard() {
	schema, err := protocol.WithConnectorChannelIDInputSchema(json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	card := &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           protocol.Build{Version: "0.1.0", BuildTime: "2612021200"},
		ConnectorCardID: "im.example",
		Connector:       protocol.CardInfo{Name: "Example", Version: "0.1.0"},
		Supports: protocol.Supports{
			TargetTypes: []string{protocol.TargetIM},
			Targets:     []protocol.Target{{TargetType: protocol.TargetIM, Provider: "example", Label: "Example"}},
			Profiles:    []string{protocol.ProfileIMv2},
		},
		Tools: []protocol.Tool{{ToolID: "example_message_send", Profile: protocol.ProfileIMv2, InputSchema: schema}},
	}
	fmt.Println("valid:", len(protocol.ValidateCard(card)) == 0)

	card.Tools[0].ToolID = "send message!"
	for _, v := range protocol.ValidateCard(card) {
		fmt.Println(v.Path)
	}
	// Output:
	// valid: true
	// tools[0].tool_id
}

// Negotiation answers which packets may travel on a channel.
func ExampleNegotiate() {
	card := &protocol.Card{Supports: protocol.Supports{Profiles: []string{protocol.ProfileIMv2}}}
	n := protocol.Negotiate(card, []string{protocol.ProfileIMv1, protocol.ProfileIMv2})
	fmt.Println(n.Profiles())
	fmt.Println(n.Allows(protocol.TypeChatMessageDelta, protocol.ToConnector))
	fmt.Println(n.Allows(protocol.TypeChatMessageDelta, protocol.ToHost))
	fmt.Println(n.Allows(protocol.TypeMessagePush, protocol.ToHost))
	// Output:
	// [xagent.im.v2]
	// true
	// false
	// false
}

// Find the upload-reference arguments of a Card tool, whichever spelling
// the Card uses (the spec names no keyword): xconn's own format, another
// spelling of it, and a string property named file_ref.
func ExampleUploadRefArguments() {
	schema := json.RawMessage(`{"type":"object","required":["connector_channel_id"],"properties":{
		"connector_channel_id":{"type":"string"},
		"photo":{"type":"string","format":"` + protocol.FormatUploadRef + `"},
		"attachment":{"type":"string","format":"upload-ref"},
		"file_ref":{"type":"string"},
		"caption":{"type":"string"}}}`)
	names := protocol.UploadRefArguments(schema)
	slices.Sort(names)
	fmt.Println(names)
	// Output: [attachment file_ref photo]
}
