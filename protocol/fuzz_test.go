package protocol

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// FuzzDecodeEnvelope checks that DecodeEnvelope and ValidatePacketJSON never
// panic, that Encode(Decode(x)) decodes to an equal envelope, and that a
// packet ValidatePacketJSON accepts also passes the official schema.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, p := range vPacketSeeds() {
		f.Add([]byte(p))
	}
	for _, p := range []string{`{}`, `[]`, `null`, `{"schema":1}`, `{"payload":[1]}`, `{"type":"chat.message","payload":{"files":[{}]}}`,
		`{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"pong","payload":null,"x":{"y":[1,2]}}`, `{"Type":"a","type":"b"}`} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range []Direction{0, ToHost, ToConnector} {
			if _, vs := ValidatePacketJSON(data, d); len(vs) == 0 {
				if svs := ValidateSchema(SchemaPacket, data); len(svs) > 0 {
					t.Fatalf("accepted for %v but the schema rejects: %v", d, svs)
				}
			}
		}
		e1, err := DecodeEnvelope(data)
		if err != nil {
			return
		}
		ValidateEnvelope(e1)
		for _, d := range []Direction{0, ToHost, ToConnector} {
			checkDecodedSame(t, e1, d, ValidatePayload(e1, d))
		}
		b1, err := e1.Encode()
		if err != nil {
			t.Fatalf("encode a decoded envelope: %v", err)
		}
		e2, err := DecodeEnvelope(b1)
		if err != nil {
			t.Fatalf("decode an encoded envelope %s: %v", b1, err)
		}
		b2, err := e2.Encode()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		// Compare as JSON values: an invalid UTF-8 key encodes as "\ufffd"
		// the first time and as a literal U+FFFD the second; both are the
		// same JSON string (regression seed 36e25c16723bcc8f).
		var v1, v2 any
		if err := json.Unmarshal(b1, &v1); err != nil {
			t.Fatalf("encoded envelope is not JSON: %v", err)
		}
		if err := json.Unmarshal(b2, &v2); err != nil {
			t.Fatalf("re-encoded envelope is not JSON: %v", err)
		}
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("round trip changed the envelope:\n%s\n%s", b1, b2)
		}
		if e1.Schema != e2.Schema || e1.PacketID != e2.PacketID || e1.RequestID != e2.RequestID || e1.ReplyTo != e2.ReplyTo ||
			e1.ConnectorChannelID != e2.ConnectorChannelID || e1.Type != e2.Type || e1.Time != e2.Time ||
			(e1.Error == nil) != (e2.Error == nil) || len(e1.Extensions) != len(e2.Extensions) {
			t.Fatalf("round trip changed fields: %+v vs %+v", e1, e2)
		}
	})
}

// FuzzValidateCard checks that Card validation never panics, that an
// accepted Card passes the official schema, and that an accepted Card stays
// accepted after a decode/encode round trip.
func FuzzValidateCard(f *testing.F) {
	card, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(card)
	for _, m := range vMutants(f, card, 24, 7) {
		f.Add(m)
	}
	for _, s := range []string{`{}`, `[]`, `{"tools":[{"input_schema":[]}]}`, `{"server_base_url":1}`,
		`{"auth_flows":[{"type":"form","fields":[{"default_value":"x","secret":true}]}]}`, `{"schema":"a","Schema":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, vs := ValidateCardJSON(data)
		if c != nil {
			ValidateCard(c)
			ValidateSkill([]byte("---\nname: x\n---\n"), c)
		}
		if len(vs) > 0 {
			return
		}
		if svs := ValidateSchema(SchemaCard, data); len(svs) > 0 {
			t.Fatalf("accepted but the schema rejects: %v", svs)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("encode an accepted card: %v", err)
		}
		if _, vs := ValidateCardJSON(b); len(vs) > 0 {
			t.Fatalf("accepted card rejected after a round trip: %v\n%s", vs, b)
		}
	})
}

// FuzzValidateDescriptor checks that Descriptor validation never panics and
// that an accepted v2 Descriptor passes the official schema.
func FuzzValidateDescriptor(f *testing.F) {
	desc, err := os.ReadFile("testdata/spec_descriptor.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(desc)
	for _, m := range vMutants(f, desc, 24, 8) {
		f.Add(m)
	}
	for _, s := range []string{`{}`, `[]`, `{"schema":"xagent.connection/v1","connection":{"profile":"xagent.im.v2"}}`,
		`{"tools":[{"tool_id":""}]}`, `{"target":{"Provider":"a"}}`} {
		f.Add([]byte(s))
	}
	card, err := os.ReadFile("testdata/spec_card.json")
	if err != nil {
		f.Fatal(err)
	}
	specCard, err := ParseCard(card)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []*Card{nil, specCard} {
			d, vs := ValidateDescriptorJSON(data, c)
			if d != nil {
				ValidateDescriptorAgainstCard(d, specCard, "cch_1")
			}
			if len(vs) > 0 {
				continue
			}
			var peek struct{ Schema string }
			if json.Unmarshal(data, &peek) == nil && peek.Schema == DescriptorSchemaV1 {
				continue // normalised to v2 before the v2 schema applies
			}
			if svs := ValidateSchema(SchemaDescriptor, data); len(svs) > 0 {
				t.Fatalf("accepted but the schema rejects: %v", svs)
			}
		}
	})
}
