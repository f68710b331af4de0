// Package protocol is the wire contract of the xAgent Connector protocol 3.0,
// pure Go and without I/O. Every other xconn package speaks through it.
//
// # What is here
//
//   - Constants: schema names, the data-plane subprotocol, the protocol
//     version, endpoint paths, Profile IDs, target types and every enum of the
//     spec (connection, tool, permission, auth, cancel, activity, file, ack,
//     trust).
//   - Typed structs for the Connector Card ([Card]), the Connection
//     Descriptor ([Descriptor]), the Skill header ([SkillHeader]), the packet
//     envelope ([Envelope]) and the payload of every packet type of the
//     common protocol, IM v2 and IM v1 (see packets.go). Unknown JSON members
//     are kept in each type's Extensions field and written back on encode.
//   - Validation that returns every violation at once, each with a JSON path
//     and a reason ([Violations]): [ValidateBaseURL], [ValidateCard],
//     [ValidateCardJSON], [ValidateSkill], [ValidateDescriptor],
//     [ValidateDescriptorAgainstCard], [ValidateEnvelope], [ValidatePayload]
//     (and [ValidateDecodedPayload] for a payload already decoded),
//     [ValidatePacketJSON], and the official JSON Schemas ([ValidateSchema]),
//     embedded byte-identical.
//   - Versions ([ParseVersion], [Admit]): a missing version parses as 1.0 and
//     is refused by the 3.0 admission floor.
//   - The Profile catalog as data ([Profiles], [LookupPacket]) and negotiation
//     ([Negotiate]), whose immutable result answers "may packet type T go in
//     direction D on this channel?" ([Negotiated.Allows]).
//   - The tool-schema helper [WithConnectorChannelIDInputSchema].
//   - Error codes of section 8.23 and of IM v2 as typed values ([Error],
//     [Code]) that convert to and from the envelope's error object.
//
// # Building and validating a Card
//
// A Connector declares itself with a Card. Build it as a value, inject the
// reserved connector_channel_id argument into every tool's input schema with
// [WithConnectorChannelIDInputSchema], and validate it before serving it:
//
//	schema, err := protocol.WithConnectorChannelIDInputSchema(json.RawMessage(
//		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
//	if err != nil { ... }
//	card := &protocol.Card{
//		Schema:          protocol.CardSchema,
//		ProtocolVersion: protocol.ProtocolVersion,
//		Build:           protocol.Build{Version: "0.1.0", BuildTime: "2612021200"},
//		ConnectorCardID: "im.example",
//		Connector:       protocol.CardInfo{Name: "Example", Version: "0.1.0"},
//		Supports: protocol.Supports{
//			TargetTypes: []string{protocol.TargetIM},
//			Targets:     []protocol.Target{{TargetType: protocol.TargetIM, Provider: "example", Label: "Example"}},
//			Profiles:    []string{protocol.ProfileIMv2},
//		},
//		Tools: []protocol.Tool{{ToolID: "example_message_send", Profile: protocol.ProfileIMv2, InputSchema: schema}},
//	}
//	if vs := protocol.ValidateCard(card); len(vs) > 0 {
//		for _, v := range vs {
//			fmt.Println(v) // e.g. "tools[0].tool_id: must match ^[A-Za-z0-9_.-]+$"
//		}
//	}
//
// A received Card is checked with [ValidateCardJSON], which applies the
// official JSON Schema and every hard rule of section 4.1 to the raw bytes.
//
// # Packets
//
// Each WebSocket text frame carries one [Envelope]. Decode it with
// [DecodeEnvelope], check it with [ValidateEnvelope] and [ValidatePayload],
// then decode the payload into the struct for its type with
// [Envelope.DecodePayload]. Answer a request with [Envelope.Reply], which
// copies request_id, sets reply_to and keeps the channel.
//
// Protocol errors travel as an "error" packet, business failures in the
// error of the matching ack; both carry an [ErrorBody] made from an [*Error]
// with [Error.Wire].
//
// Nothing in this package keeps state between calls; all functions are safe
// for concurrent use, and values are not shared with callers.
package protocol
