package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xconn/xconn/protocol"
)

func aggregateIDs() []string {
	return []string{"ws.text-frames", "envelope.valid", "envelope.request-id", "envelope.reply-to",
		"descriptor.schema-v2", "descriptor.valid", "descriptor.card", "descriptor.channel", "descriptor.connector-id", "descriptor.profiles-negotiated",
		"imv2.descriptor", "imv1.descriptor", "device.descriptor", "imv2.no-internal-fields", "imv2.connector-direction",
		"imv2.inbound-valid", "imv1.message-push", "transfer.download", "transfer.download-other-channel", "descriptor.push", "security.no-secret-leak"}
}

// findings records the verdict of a requirement that holds for everything
// observed: pass when nothing was found, else the first finding.
func findings(r *recorder, id, expected string, fs []finding) {
	if len(fs) == 0 {
		r.pass(id)
		return
	}
	what := fs[0].what
	if len(fs) > 1 {
		what += fmt.Sprintf(" (and %d more)", len(fs)-1)
	}
	r.fail(id, expected, what, fs[0].packet)
}

// probeAggregates closes every connection (observing what is queued) and
// judges the requirements that hold for every packet of the run.
func probeAggregates(ctx context.Context, s *session, r *recorder) {
	s.closeAll()
	o := &s.obs
	if o.frames == 0 {
		r.skip("ws.text-frames", "no frame received")
		r.skip("envelope.valid", "no frame received")
	}
	findings(r, "ws.text-frames", "text frames with one JSON packet each", append(append([]finding(nil), o.nonText...), o.badEnvelope...))
	findings(r, "envelope.valid", "schema, packet_id and type on every packet", o.badEnvelope)
	if o.acks == 0 {
		r.skip("envelope.request-id", "no ack received")
		r.skip("envelope.reply-to", "no ack received")
	}
	findings(r, "envelope.request-id", "request_id echoed", o.requestID)
	findings(r, "envelope.reply-to", "reply_to = request packet_id", o.replyTo)
	findings(r, "imv2.no-internal-fields", "no internal fields in chat payloads", o.internalField)
	findings(r, "imv2.connector-direction", "no chat.message.delta or chat.activity from the Connector", o.direction)
	if len(s.secrets) == 0 {
		r.skip("security.no-secret-leak", "no API key or secret auth input was given to the run")
	}
	findings(r, "security.no-secret-leak", "no secret in any response", o.leaks)

	if s.card != nil {
		judgeDescriptors(s, r)
		judgePushes(s, r)
	} else {
		r.skipRest("no usable Card")
	}
	var inbound []finding
	for _, in := range o.inbound {
		inbound = append(inbound, inboundProblems(in)...)
	}
	findings(r, "imv2.inbound-valid", "valid inbound chat.message payloads", inbound)
	var pushes []finding
	for _, f := range o.pushes {
		pushes = append(pushes, pushProblems(f, s.redact(string(f.data)))...)
	}
	findings(r, "imv1.message-push", "valid message.push payloads", pushes)
	if r.want("transfer.download") {
		probeDownloads(ctx, s, r)
	}
	if r.want("transfer.download-other-channel") {
		probeDownloadOtherChannel(ctx, s, r)
	}
}

// judgePushes checks every connection.descriptor.push of the run (section
// 8.17): a valid Descriptor, consistent with the Card, naming the channel
// of its envelope and the connection's connector_id.
func judgePushes(s *session, r *recorder) {
	if len(s.obs.descPushes) == 0 {
		return // the runner skips descriptor.push with the reason
	}
	var fs []finding
	for _, ob := range s.obs.descPushes {
		if ob.desc == nil {
			add(&fs, "pushed Descriptor does not decode", ob.packet)
			continue
		}
		d := ob.desc
		schemaInput := ob.raw
		if rawSchema(ob.raw) == protocol.DescriptorSchemaV1 {
			if b, err := json.Marshal(d); err == nil {
				schemaInput = b // judged as xAgent reads it; descriptor.schema-v2 covers v1
			}
		}
		vs := append(protocol.ValidateSchema(protocol.SchemaDescriptor, schemaInput), protocol.ValidateDescriptor(d)...)
		vs = append(vs, protocol.ValidateDescriptorAgainstCard(d, s.card, "")...)
		switch {
		case len(vs) > 0:
			add(&fs, vs.Error(), ob.packet)
		case ob.channel == "":
			add(&fs, "connection.descriptor.push without an envelope connector_channel_id", ob.packet)
		case d.Connection.ConnectorChannelID != ob.channel:
			add(&fs, fmt.Sprintf("pushed Descriptor names channel %q, its envelope %q", d.Connection.ConnectorChannelID, ob.channel), ob.packet)
		case ob.connectorID != "" && d.Connection.ConnectorID != ob.connectorID:
			add(&fs, fmt.Sprintf("pushed Descriptor names connector_id %q on a connection with connector_id %q", d.Connection.ConnectorID, ob.connectorID), ob.packet)
		}
	}
	findings(r, "descriptor.push", "pushed Descriptors valid and naming their own channel and connector_id", fs)
}

// judgeDescriptors checks every Descriptor the run saw.
func judgeDescriptors(s *session, r *recorder) {
	if len(s.obs.descriptors) == 0 {
		for _, id := range []string{"descriptor.schema-v2", "descriptor.valid", "descriptor.card", "descriptor.channel", "descriptor.connector-id",
			"descriptor.profiles-negotiated", "imv2.descriptor", "imv1.descriptor", "device.descriptor"} {
			r.skip(id, "no Descriptor received")
		}
		return
	}
	var valid, legacy, card, channel, connector, negotiated []finding
	profileTarget := map[protocol.Profile][]finding{}
	enabled := map[protocol.Profile]bool{}
	for _, ob := range s.obs.descriptors {
		if ob.desc == nil {
			add(&valid, "Descriptor does not decode", ob.packet)
			continue
		}
		d := ob.desc
		// A v1 Descriptor is one finding of its own (section 12: a 3.0
		// Connector does not emit it); otherwise it is judged as xAgent
		// reads it, normalised to v2, so that its singular profile is not
		// counted again as schema violations.
		schemaInput := ob.raw
		if rawSchema(ob.raw) == protocol.DescriptorSchemaV1 {
			add(&legacy, "Descriptor schema "+protocol.DescriptorSchemaV1, ob.packet)
			if b, err := json.Marshal(d); err == nil {
				schemaInput = b
			}
		}
		vs := append(protocol.ValidateSchema(protocol.SchemaDescriptor, schemaInput), protocol.ValidateDescriptor(d)...)
		if len(vs) > 0 {
			add(&valid, vs.Error(), ob.packet)
		}
		if vs := protocol.ValidateDescriptorAgainstCard(d, s.card, ""); len(vs) > 0 {
			add(&card, vs.Error(), ob.packet)
		}
		if ob.channel != "" && d.Connection.ConnectorChannelID != ob.channel {
			add(&channel, fmt.Sprintf("connector_channel_id %q for channel %q", d.Connection.ConnectorChannelID, ob.channel), ob.packet)
		}
		if ob.connectorID != "" && d.Connection.ConnectorID != ob.connectorID {
			add(&connector, fmt.Sprintf("connector_id %q on a connection with connector_id %q", d.Connection.ConnectorID, ob.connectorID), ob.packet)
		}
		for _, p := range d.Connection.Profiles {
			if ob.supported != nil && !oneOf(p, ob.supported...) {
				add(&negotiated, fmt.Sprintf("profile %s not in supported_profiles %s", p, quoteList(ob.supported)), ob.packet)
			}
			enabled[p] = true
			if allowed := profileTargetTypes(p); allowed != nil && !oneOf(d.Connection.TargetType, allowed...) {
				fs := profileTarget[p]
				add(&fs, fmt.Sprintf("%s enabled with target_type %q", p, d.Connection.TargetType), ob.packet)
				profileTarget[p] = fs
			}
		}
	}
	// A Card with a single standard Profile must enable it on a signed-in
	// channel (IM v1 §3, IM v2 §2, Device v1 §2): our hello offers every one.
	if d := s.authDesc; d != nil {
		if std := standardProfiles(s.card); len(std) == 1 {
			p := std[0]
			if !oneOf(p, d.Connection.Profiles...) {
				fs := profileTarget[p]
				add(&fs, fmt.Sprintf("the signed-in Descriptor does not enable %s (profiles %s)", p, quoteList(d.Connection.Profiles)), "")
				profileTarget[p] = fs
				enabled[p] = true
			}
		}
	}
	findings(r, "descriptor.schema-v2", "Descriptors of schema "+protocol.DescriptorSchema, legacy)
	findings(r, "descriptor.valid", "valid Descriptors", valid)
	findings(r, "descriptor.card", "Descriptors consistent with the Card", card)
	findings(r, "descriptor.channel", "the channel's own id", channel)
	findings(r, "descriptor.connector-id", "the hello.ack connector_id", connector)
	findings(r, "descriptor.profiles-negotiated", "profiles within supported_profiles", negotiated)
	for id, p := range map[string]protocol.Profile{"imv2.descriptor": protocol.ProfileIMv2, "imv1.descriptor": protocol.ProfileIMv1, "device.descriptor": protocol.ProfileDeviceV1} {
		if !enabled[p] {
			r.skip(id, "no Descriptor enabled "+p)
			continue
		}
		findings(r, id, "target_type "+quoteList(profileTargetTypes(p)), profileTarget[p])
	}
}

// inboundProblems checks one inbound chat.message (IM v2 section 5).
func inboundProblems(in inboundChat) []finding {
	var fs []finding
	p := in.payload
	if in.env.ConnectorChannelID == "" {
		add(&fs, "chat.message without connector_channel_id", in.packet)
	}
	if p.MessageID == "" {
		add(&fs, "chat.message without message_id", in.packet)
	}
	if p.Text == "" && len(p.Files) == 0 {
		add(&fs, "chat.message with neither text nor files", in.packet)
	}
	refs := map[string]bool{}
	for i, f := range p.Files {
		switch {
		case !oneOf(f.Type, protocol.FileImage, protocol.FileVideo, protocol.FileAudio, protocol.FileFile):
			add(&fs, fmt.Sprintf("files[%d].type %q", i, f.Type), in.packet)
		case f.FileRef == "" || refs[f.FileRef]:
			add(&fs, fmt.Sprintf("files[%d].file_ref empty or repeated", i), in.packet)
		case f.DownloadURL == "":
			add(&fs, fmt.Sprintf("files[%d] without download_url", i), in.packet)
		}
		refs[f.FileRef] = true
	}
	return fs
}

// pushProblems checks one message.push (IM v1 section 5).
func pushProblems(f frame, packet string) []finding {
	var fs []finding
	var p protocol.MessagePushPayload
	var members map[string]json.RawMessage
	if f.env.DecodePayload(&p) != nil || json.Unmarshal(f.env.Payload, &members) != nil {
		add(&fs, "message.push payload does not decode", packet)
		return fs
	}
	var missing []string
	for name, v := range map[string]string{"provider": p.Provider, "event_kind": p.EventKind, "message_id": p.MessageID,
		"sender_id": p.SenderID, "message_type": p.MessageType} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if _, ok := members["raw_text"]; !ok {
		missing = append(missing, "raw_text")
	}
	if p.Text == "" && p.Content == "" {
		missing = append(missing, "text or content")
	}
	if f.env.ConnectorChannelID == "" {
		missing = append(missing, "envelope connector_channel_id")
	}
	if len(missing) > 0 {
		add(&fs, "message.push lacks "+strings.Join(missing, ", "), packet)
	}
	if p.Profile != protocol.ProfileIMv1 {
		add(&fs, fmt.Sprintf("message.push profile %q", p.Profile), packet)
	}
	return fs
}

// standardProfiles returns the standard Profiles the Card declares.
func standardProfiles(c *protocol.Card) []protocol.Profile {
	var out []protocol.Profile
	for _, p := range c.Supports.Profiles {
		if profileTargetTypes(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

// rawSchema returns the "schema" member of a JSON object, or "".
func rawSchema(raw []byte) string {
	var peek struct {
		Schema string `json:"schema"`
	}
	_ = json.Unmarshal(raw, &peek)
	return peek.Schema
}
