package protocol_test

import (
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// Check an administrator's Base URL and resolve a fixed endpoint under it.
func ExampleValidateBaseURL() {
	u, vs := protocol.ValidateBaseURL("https://connectors.example.com/wechat/")
	fmt.Println(u.JoinPath(protocol.PathCard), len(vs))
	_, vs = protocol.ValidateBaseURL("https://user:pw@connectors.example.com/?k=1")
	for _, v := range vs {
		fmt.Println(v.Reason)
	}
	// Output:
	// https://connectors.example.com/wechat/connector-card.json 0
	// base URL must not contain userinfo
	// base URL must not contain a query
}

// Validate one received packet, envelope and payload, for its direction.
func ExampleValidatePacketJSON() {
	data := []byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p1","connector_channel_id":"cch_1",
		"type":"chat.message","payload":{"message_id":"m1","files":[{"type":"file","file_ref":"f1"}]}}`)
	_, vs := protocol.ValidatePacketJSON(data, protocol.ToHost)
	for _, v := range vs {
		fmt.Println(v)
	}
	// Output:
	// payload.files[0].download_url: is required on a Connector to xAgent message
}

// Decode a received chat.message once, then validate what was decoded.
func ExampleValidateDecodedPayload() {
	env, err := protocol.DecodeEnvelope([]byte(`{"schema":"xagent.connector.packet/v1","packet_id":"p1",
		"connector_channel_id":"cch_1","type":"chat.message","payload":{"message_id":"m1","text":""}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var p protocol.ChatMessagePayload
	if err := env.DecodePayload(&p); err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range protocol.ValidateDecodedPayload(env, protocol.ToHost, &p) {
		fmt.Println(v)
	}
	// Output:
	// payload: text or files must be non-empty
}

// Derive and check Skill names for a Card id.
func ExampleValidateSkillName() {
	fmt.Println(protocol.PrimarySkillName("im.wechat"))
	fmt.Println(len(protocol.ValidateSkillName("connector-im-wechat-file", "im.wechat")) == 0)
	fmt.Println(len(protocol.ValidateSkillName("im-connector-reply", "im.wechat")) == 0)
	// Output:
	// connector-im-wechat
	// true
	// false
}

// Validate a Connection Descriptor against the Card of its Connector.
func ExampleValidateDescriptorAgainstCard() {
	card := &protocol.Card{ConnectorCardID: "im.wechat", Supports: protocol.Supports{
		TargetTypes: []string{protocol.TargetIM}, Profiles: []string{protocol.ProfileIMv2}}}
	d := &protocol.Descriptor{Connection: protocol.Connection{ConnectorCardID: "im.wechat",
		ConnectorChannelID: "cch_1", TargetType: protocol.TargetIM, Profiles: []string{protocol.ProfileIMv1}}}
	for _, v := range protocol.ValidateDescriptorAgainstCard(d, card, "cch_1") {
		fmt.Println(v)
	}
	// Output:
	// connection.profiles[0]: profile "xagent.im.v1" is not declared in the Card's supports.profiles
}
