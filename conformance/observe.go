package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// finding is one piece of evidence against a requirement: what was wrong and
// the packet that showed it.
type finding struct {
	what   string
	packet string
}

// observations collects what the Connector sent during a run, for the
// requirements that hold for every packet. Each list keeps at most
// maxFindings entries.
type observations struct {
	frames        int
	packets       int
	nonText       []finding
	badEnvelope   []finding
	requestID     []finding
	replyTo       []finding
	acks          int
	leaks         []finding
	internalField []finding
	direction     []finding
	descriptors   []descObs
	// descPushes are the connection.descriptor.push Descriptors, judged
	// by descriptor.push alone (section 8.17), not by the descriptor.*
	// rules, so that one bad push is one finding.
	descPushes []descObs
	inbound    []inboundChat
	pushes     []frame
	files      []protocol.ChatFile
}

const maxFindings = 16

type descObs struct {
	desc        *protocol.Descriptor
	raw         []byte
	channel     string
	connectorID string
	supported   []protocol.Profile
	packet      string
}

type inboundChat struct {
	env     *protocol.Envelope
	payload protocol.ChatMessagePayload
	packet  string
}

func add(list *[]finding, what, packet string) {
	if len(*list) < maxFindings {
		*list = append(*list, finding{what: what, packet: packet})
	}
}

func (o *observations) leak(where, packet string) { add(&o.leaks, "secret in "+where, packet) }

// observe inspects one frame received on w.
func (s *session) observe(w *wsConn, f frame) {
	o := &s.obs
	o.frames++
	s.learnTokens(f)
	packet := s.redact(string(f.data))
	if s.leaks(f.data) {
		o.leak("packet", packet)
	}
	if f.kind != websocket.MessageText {
		add(&o.nonText, fmt.Sprintf("%v frame", f.kind), packet)
	}
	if f.env == nil {
		add(&o.badEnvelope, "not a JSON packet", packet)
		return
	}
	o.packets++
	e := f.env
	switch {
	case e.Schema != protocol.PacketSchema:
		add(&o.badEnvelope, fmt.Sprintf("schema %q", e.Schema), packet)
	case e.PacketID == "":
		add(&o.badEnvelope, "no packet_id", packet)
	case e.Type == "":
		add(&o.badEnvelope, "no type", packet)
	}
	switch e.Type {
	case protocol.TypeChatMessageDelta, protocol.TypeChatActivity:
		add(&o.direction, "Connector sent "+e.Type, packet)
	}
	if strings.HasPrefix(e.Type, "chat.") && len(e.Payload) > 0 {
		var members map[string]json.RawMessage
		if json.Unmarshal(e.Payload, &members) == nil {
			for _, k := range protocol.ForbiddenIMv2PayloadFields() {
				if _, ok := members[k]; ok {
					add(&o.internalField, e.Type+" payload has "+k, packet)
				}
			}
		}
	}
	switch e.Type {
	case protocol.TypeChannelOpenAck, protocol.TypeDescriptorGetAck, protocol.TypeDescriptorPush,
		protocol.TypeAuthStartAck, protocol.TypeAuthStatusAck, protocol.TypeAuthCancelAck, protocol.TypeAuthLogoutAck:
		s.observeDescriptor(w, e, packet)
	case protocol.TypeChatMessage:
		var p protocol.ChatMessagePayload
		_ = e.DecodePayload(&p) // a payload that does not decode fails imv2.inbound-valid
		if len(o.inbound) < maxFindings {
			o.inbound = append(o.inbound, inboundChat{env: e, payload: p, packet: packet})
		}
		o.addFiles(p.Files)
	case protocol.TypeMessagePush:
		if len(o.pushes) < maxFindings {
			o.pushes = append(o.pushes, f)
		}
		var p protocol.MessagePushPayload
		if e.DecodePayload(&p) == nil {
			o.addFiles(p.Files)
		}
	}
}

func (o *observations) addFiles(files []protocol.ChatFile) {
	for _, f := range files {
		if f.DownloadURL != "" && len(o.files) < maxFindings {
			o.files = append(o.files, f)
		}
	}
}

// observeDescriptor records the Descriptor carried by an ack or push.
func (s *session) observeDescriptor(w *wsConn, e *protocol.Envelope, packet string) {
	var holder struct {
		ConnectorChannelID   string          `json:"connector_channel_id"`
		ConnectionDescriptor json.RawMessage `json:"connection_descriptor"`
	}
	if json.Unmarshal(e.Payload, &holder) != nil || len(holder.ConnectionDescriptor) == 0 || string(holder.ConnectionDescriptor) == "null" {
		return
	}
	ch := e.ConnectorChannelID
	if e.Type == protocol.TypeChannelOpenAck && holder.ConnectorChannelID != "" {
		ch = holder.ConnectorChannelID
	}
	d, err := protocol.ParseDescriptor(holder.ConnectionDescriptor)
	if err != nil {
		d = nil
	}
	ob := descObs{desc: d, raw: holder.ConnectionDescriptor, channel: ch, supported: w.supported, packet: packet}
	if w.helloAck != nil {
		ob.connectorID = w.helloAck.ConnectorID
	}
	list := &s.obs.descriptors
	if e.Type == protocol.TypeDescriptorPush {
		list = &s.obs.descPushes
	}
	if len(*list) < 4*maxFindings {
		*list = append(*list, ob)
	}
}

// observeAnswer checks the correlation fields of an ack answering req.
func (s *session) observeAnswer(req *protocol.Envelope, f frame) {
	if f.env == nil || !strings.HasSuffix(f.env.Type, ".ack") {
		return
	}
	s.obs.acks++
	packet := s.redact(string(f.data))
	if req.RequestID != "" && f.env.RequestID != req.RequestID {
		add(&s.obs.requestID, fmt.Sprintf("%s request_id %q, want %q", f.env.Type, f.env.RequestID, req.RequestID), packet)
	}
	if f.env.ReplyTo != req.PacketID {
		add(&s.obs.replyTo, fmt.Sprintf("%s reply_to %q, want %q", f.env.Type, f.env.ReplyTo, req.PacketID), packet)
	}
}

// learnTokens registers the signed tokens a packet hands out (a QR code, a
// download_url) for redaction before anything quotes the packet.
func (s *session) learnTokens(f frame) {
	if f.env == nil || len(f.env.Payload) == 0 {
		return
	}
	var p struct {
		QRCodeText  string `json:"qr_code_text"`
		QRCodeImage string `json:"qr_code_image"`
		Files       []struct {
			DownloadURL string `json:"download_url"`
		} `json:"files"`
	}
	if json.Unmarshal(f.env.Payload, &p) != nil {
		return
	}
	s.addToken(p.QRCodeText)
	s.addToken(p.QRCodeImage)
	for _, file := range p.Files {
		s.addToken(file.DownloadURL)
	}
}
