package conformance

import (
	"context"
	"fmt"

	"github.com/xconn/xconn/protocol"
)

// probeBeforeHello sends channel.open as the first packet.
func probeBeforeHello(ctx context.Context, s *session, r *recorder) {
	c, _, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
	if err != nil {
		r.skipRest("the /ws handshake failed: " + err.Error())
		return
	}
	defer s.track(c).close()
	env := c.newEnvelope(protocol.TypeChannelOpen, "", protocol.EmptyPayload{})
	if err := c.send(ctx, env); err != nil {
		r.skipRest(err.Error())
		return
	}
	f, err := c.await(ctx, s.opts.timeout(), func(f frame) bool { return f.env != nil && (answers(f, env) || f.env.Type == protocol.TypeError) })
	code, rejected := rejection(f, err)
	packet := s.redact(string(f.data))
	r.check("ws.first-packet-hello", rejected, "an error packet (channel.open not processed)", describe(f, err), packet)
	r.check("ws.hello-required-code", code == string(protocol.CodeHelloRequired), "error code hello_required", describe(f, err), packet)
}

// probeHelloRejections sends hellos a current Connector must reject, each on
// its own connection.
func probeHelloRejections(ctx context.Context, s *session, r *recorder) {
	if !needCard(s, r) {
		return
	}
	type variant struct {
		ids     []string
		mutate  func(*protocol.HelloPayload)
		wantErr string
	}
	variants := []variant{
		{[]string{"ws.hello-version-missing"}, func(h *protocol.HelloPayload) { h.ProtocolVersion = "" }, ""},
		{[]string{"ws.hello-version-old"}, func(h *protocol.HelloPayload) { h.ProtocolVersion = "2.0" }, ""},
		{[]string{"ws.hello-card-id-mismatch", "ws.hello-card-id-mismatch-code"},
			func(h *protocol.HelloPayload) { h.ConnectorCardID = "conformance.not-this-card" }, string(protocol.CodeConnectorCardIDMismatch)},
		{[]string{"ws.hello-profiles-required"}, func(h *protocol.HelloPayload) { h.SupportedProfiles = nil }, ""},
	}
	for _, v := range variants {
		if !r.any(v.ids...) {
			continue
		}
		c, _, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
		if err != nil {
			for _, id := range v.ids {
				r.skip(id, "the /ws handshake failed: "+err.Error())
			}
			continue
		}
		s.track(c)
		p := s.helloPayload("")
		v.mutate(&p)
		env := c.newEnvelope(protocol.TypeHello, "", p)
		var f frame
		if err = c.send(ctx, env); err == nil {
			f, err = c.await(ctx, s.opts.timeout(), func(f frame) bool {
				return f.env != nil && (answers(f, env) || f.env.Type == protocol.TypeError)
			})
		}
		c.close()
		code, rejected := rejection(f, err)
		packet := s.redact(string(f.data))
		r.check(v.ids[0], rejected, "an error packet or a closed connection, no hello.ack", describe(f, err), packet)
		if len(v.ids) > 1 {
			r.check(v.ids[1], code == v.wantErr, "error code "+v.wantErr, describe(f, err), packet)
		}
	}
	if r.want("ws.hello-version-newer") {
		probeNewerHello(ctx, s, r)
	}
	if r.any("ws.hello-connector-id-mismatch", "ws.hello-connector-id-mismatch-code") {
		probeRehello(ctx, s, r)
	}
}

// probeNewerHello sends a hello with protocol_version 3.1: a 3.0 Connector
// answers it with its own version (section 12), so that a newer xAgent,
// whose window admits 3.0, can use it.
func probeNewerHello(ctx context.Context, s *session, r *recorder) {
	const id = "ws.hello-version-newer"
	c, _, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
	if err != nil {
		r.skip(id, "the /ws handshake failed: "+err.Error())
		return
	}
	defer s.track(c).close()
	p := s.helloPayload("")
	p.ProtocolVersion = "3.1"
	f, err := c.request(ctx, c.newEnvelope(protocol.TypeHello, "", p))
	actual := describe(f, err)
	var ack protocol.HelloAckPayload
	ok := err == nil && f.env.Type == protocol.TypeHelloAck && f.env.Error == nil && f.env.DecodePayload(&ack) == nil
	if ok {
		actual = fmt.Sprintf("connector.hello.ack with protocol_version %q", ack.ProtocolVersion)
	}
	ok = ok && ack.ProtocolVersion == s.card.ProtocolVersion
	r.check(id, ok, "connector.hello.ack with the Card's protocol_version "+s.card.ProtocolVersion, actual, s.redact(string(f.data)))
}

// probeRehello completes hello on two connections, then sends a second
// hello on the first naming the second's connector_id: a connection
// belongs to one connector_id (sections 3 and 8.23).
func probeRehello(ctx context.Context, s *session, r *recorder) {
	a, err := s.openHello(ctx, "")
	if err != nil {
		r.skipRest("no first connection: " + err.Error())
		return
	}
	defer a.close()
	b, err := s.openHello(ctx, "")
	if err != nil {
		r.skipRest("no second connection: " + err.Error())
		return
	}
	defer b.close()
	other := b.helloAck.ConnectorID
	if other == a.helloAck.ConnectorID {
		// One connector_id for every connection: name one it never issued.
		other = "conn_conformance_other_" + runTag(s)
	}
	env := a.newEnvelope(protocol.TypeHello, "", s.helloPayload(other))
	var f frame
	if err = a.send(ctx, env); err == nil {
		f, err = a.await(ctx, s.opts.timeout(), func(f frame) bool {
			return f.env != nil && (answers(f, env) || f.env.Type == protocol.TypeError)
		})
	}
	code, rejected := rejection(f, err)
	packet := s.redact(string(f.data))
	actual := describe(f, err)
	if !rejected && f.env != nil && f.env.Type == protocol.TypeHelloAck {
		var ack protocol.HelloAckPayload
		_ = f.env.DecodePayload(&ack)
		actual = fmt.Sprintf("connector.hello.ack with connector_id %q on a connection of %q", ack.ConnectorID, a.helloAck.ConnectorID)
	}
	r.check("ws.hello-connector-id-mismatch", rejected, "an error packet or a closed connection, no hello.ack", actual, packet)
	r.check("ws.hello-connector-id-mismatch-code", code == string(protocol.CodeConnectorIDMismatch), "error code connector_id_mismatch", actual, packet)
}

// probeMain opens the suite's main connection and channel, which later
// probes use.
func probeMain(ctx context.Context, s *session, r *recorder) {
	if !needCard(s, r) {
		return
	}
	c, _, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
	if err != nil {
		r.fail("ws.hello-ack", "a /ws handshake", err.Error(), "")
		r.skipRest("the /ws handshake failed")
		return
	}
	s.track(c)
	p := s.helloPayload("")
	f, err := c.hello(ctx, p)
	packet := s.redact(string(f.data))
	if err != nil || c.helloAck == nil {
		r.fail("ws.hello-ack", "connector.hello.ack", describe(f, err), packet)
		r.skipRest("hello failed")
		return
	}
	a := c.helloAck
	// protocol_version is required in the ack and must equal the Card's
	// (section 8.2): a missing one on both sides is no match.
	r.check("ws.hello-ack", a.ConnectorCardID == s.card.ConnectorCardID && a.ConnectorID != "" &&
		a.ProtocolVersion != "" && a.ProtocolVersion == s.card.ProtocolVersion,
		fmt.Sprintf("connector_card_id %s, a connector_id, protocol_version equal to the Card's %s", s.card.ConnectorCardID, present(s.card.ProtocolVersion)),
		fmt.Sprintf("connector_card_id %q, connector_id %q, protocol_version %s", a.ConnectorCardID, a.ConnectorID, present(a.ProtocolVersion)), packet)
	s.primary = c

	f, ack, err := s.openChannel(ctx, c, "")
	packet = s.redact(string(f.data))
	if err != nil || ack == nil {
		r.fail("channel.open-new", "channel.open.ack", describe(f, err), packet)
		r.skipRest("channel.open failed")
		return
	}
	d := ack.ConnectionDescriptor
	ok := ack.ConnectorChannelID != "" && f.env.ConnectorChannelID == ack.ConnectorChannelID && d != nil
	r.check("channel.open-new", ok, "equal non-empty envelope and payload connector_channel_id and a connection_descriptor",
		fmt.Sprintf("envelope %q, payload %q, descriptor present %v", f.env.ConnectorChannelID, ack.ConnectorChannelID, d != nil), packet)
	if ack.ConnectorChannelID == "" {
		r.skipRest("no channel id")
		return
	}
	s.channelID = ack.ConnectorChannelID
	if d != nil {
		r.check("channel.open-created", d.Connection.Status == protocol.StatusCreated, "status created",
			fmt.Sprintf("status %q", d.Connection.Status), packet)
	} else {
		r.skip("channel.open-created", "channel.open.ack carried no Descriptor")
	}
	f, err = c.request(ctx, c.newEnvelope(protocol.TypeDescriptorGet, s.channelID, protocol.EmptyPayload{}))
	var dp protocol.DescriptorPayload
	ok = err == nil && f.env.Type == protocol.TypeDescriptorGetAck && f.env.Error == nil &&
		f.env.DecodePayload(&dp) == nil && dp.ConnectionDescriptor != nil
	r.check("descriptor.get", ok, "connection.descriptor.get.ack with a connection_descriptor", describe(f, err), s.redact(string(f.data)))
}
