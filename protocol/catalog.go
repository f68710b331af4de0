package protocol

import "slices"

// Direction is the direction a packet travels on the data plane.
type Direction uint8

// Directions. A bidirectional packet has both bits.
const (
	// ToConnector is xAgent -> Connector.
	ToConnector Direction = 1 << iota
	// ToHost is Connector -> xAgent.
	ToHost
	// Both is a bidirectional packet (ping, pong, error, chat.message, chat.message.ack).
	Both = ToConnector | ToHost
)

func (d Direction) String() string {
	switch d {
	case ToConnector:
		return "xAgent->Connector"
	case ToHost:
		return "Connector->xAgent"
	case Both:
		return "both"
	}
	return "none"
}

// PacketSpec describes one packet type: who sends it, which Profile owns it
// ("" for the common protocol), whether it is user-level (its envelope needs
// connector_channel_id) and the type of its ack, if any.
type PacketSpec struct {
	Type      string
	Direction Direction
	Profile   Profile
	UserLevel bool
	Ack       string
	// Request reports whether the packet is a request that carries a
	// request_id, and IsAck whether it answers one.
	Request bool
	IsAck   bool
}

// ProfileSpec is one entry of the structured Profile catalog (section 11 and
// architecture section 7.2): allowed Card target types, packet types with
// their direction, and the outbound payload types a virtual message channel
// may emit for it.
type ProfileSpec struct {
	ID          Profile
	TargetTypes []TargetType
	Packets     []PacketSpec
	// OutboundPayloadTypes are the xAgent-side projections allowed out to the
	// Connector; every other internal signal is filtered silently.
	OutboundPayloadTypes []string
	// Routing is the routing boundary: the only routing key of this Profile.
	Routing string
}

// commonPackets is the packet set of the common protocol (section 8). It is
// built on each call so that callers cannot mutate shared state.
func commonPackets() []PacketSpec {
	req := func(t, ack string, user bool) PacketSpec {
		return PacketSpec{Type: t, Direction: ToConnector, UserLevel: user, Ack: ack, Request: true}
	}
	ack := func(t string, user bool) PacketSpec {
		return PacketSpec{Type: t, Direction: ToHost, UserLevel: user, IsAck: true}
	}
	return []PacketSpec{
		req(TypeHello, TypeHelloAck, false), ack(TypeHelloAck, false),
		req(TypeChannelOpen, TypeChannelOpenAck, true), ack(TypeChannelOpenAck, true),
		req(TypeChannelClose, TypeChannelCloseAck, true), ack(TypeChannelCloseAck, true),
		req(TypeAuthStart, TypeAuthStartAck, true), ack(TypeAuthStartAck, true),
		req(TypeAuthStatus, TypeAuthStatusAck, true), ack(TypeAuthStatusAck, true),
		req(TypeAuthCancel, TypeAuthCancelAck, true), ack(TypeAuthCancelAck, true),
		req(TypeAuthLogout, TypeAuthLogoutAck, true), ack(TypeAuthLogoutAck, true),
		req(TypeDescriptorGet, TypeDescriptorGetAck, true), ack(TypeDescriptorGetAck, true),
		{Type: TypeDescriptorPush, Direction: ToHost, UserLevel: true},
		req(TypeToolInvoke, TypeToolInvokeAck, true), ack(TypeToolInvokeAck, true),
		{Type: TypeToolProgressPush, Direction: ToHost, UserLevel: true},
		{Type: TypePing, Direction: Both, Ack: TypePong, Request: true},
		{Type: TypePong, Direction: Both, IsAck: true},
		{Type: TypeError, Direction: Both},
	}
}

// Profiles returns the catalog of the standard Profiles.
func Profiles() []ProfileSpec {
	return []ProfileSpec{
		{
			ID:          ProfileIMv1,
			TargetTypes: []TargetType{TargetIM},
			Packets: []PacketSpec{
				profilePacket(TypeMessagePush),
			},
			Routing: "connector_channel_id",
		},
		{
			ID:          ProfileIMv2,
			TargetTypes: []TargetType{TargetIM},
			Packets: []PacketSpec{
				profilePacket(TypeChatMessage),
				profilePacket(TypeChatMessageDelta),
				profilePacket(TypeChatMessageAck),
				profilePacket(TypeChatActivity),
			},
			OutboundPayloadTypes: []string{TypeChatMessage, TypeChatMessageDelta, TypeChatActivity},
			Routing:              "connector_channel_id",
		},
		{
			ID:          ProfileDeviceV1,
			TargetTypes: []TargetType{TargetDevice},
			// Device v1 adds no packet types: device tools use tool.invoke.
			Routing: "connector_channel_id",
		},
	}
}

// LookupProfile returns the catalog entry of a standard Profile.
func LookupProfile(id Profile) (ProfileSpec, bool) {
	for _, p := range Profiles() {
		if p.ID == id {
			return p, true
		}
	}
	return ProfileSpec{}, false
}

// LookupPacket returns the spec of a packet type of the common protocol or
// of any standard Profile. It runs for every packet, so it answers from a
// switch over the packet types instead of building the catalog.
func LookupPacket(typ string) (PacketSpec, bool) {
	req := func(ack string, user bool) (PacketSpec, bool) {
		return PacketSpec{Type: typ, Direction: ToConnector, UserLevel: user, Ack: ack, Request: true}, true
	}
	ackOf := func(user bool) (PacketSpec, bool) {
		return PacketSpec{Type: typ, Direction: ToHost, UserLevel: user, IsAck: true}, true
	}
	switch typ {
	case TypeHello:
		return req(TypeHelloAck, false)
	case TypeHelloAck:
		return ackOf(false)
	case TypeChannelOpen:
		return req(TypeChannelOpenAck, true)
	case TypeChannelClose:
		return req(TypeChannelCloseAck, true)
	case TypeAuthStart:
		return req(TypeAuthStartAck, true)
	case TypeAuthStatus:
		return req(TypeAuthStatusAck, true)
	case TypeAuthCancel:
		return req(TypeAuthCancelAck, true)
	case TypeAuthLogout:
		return req(TypeAuthLogoutAck, true)
	case TypeDescriptorGet:
		return req(TypeDescriptorGetAck, true)
	case TypeToolInvoke:
		return req(TypeToolInvokeAck, true)
	case TypeChannelOpenAck, TypeChannelCloseAck, TypeAuthStartAck, TypeAuthStatusAck,
		TypeAuthCancelAck, TypeAuthLogoutAck, TypeDescriptorGetAck, TypeToolInvokeAck:
		return ackOf(true)
	case TypeDescriptorPush, TypeToolProgressPush:
		return PacketSpec{Type: typ, Direction: ToHost, UserLevel: true}, true
	case TypePing:
		return PacketSpec{Type: typ, Direction: Both, Ack: TypePong, Request: true}, true
	case TypePong:
		return PacketSpec{Type: typ, Direction: Both, IsAck: true}, true
	case TypeError:
		return PacketSpec{Type: typ, Direction: Both}, true
	case TypeMessagePush, TypeChatMessage, TypeChatMessageDelta, TypeChatMessageAck, TypeChatActivity:
		return profilePacket(typ), true
	}
	return PacketSpec{}, false
}

// profilePacket is the spec of a packet type that a standard Profile
// adds (the zero spec for any other type). Profiles lists them; a lookup
// per packet answers from here without building the catalog.
func profilePacket(typ string) PacketSpec {
	switch typ {
	case TypeMessagePush:
		return PacketSpec{Type: typ, Direction: ToHost, Profile: ProfileIMv1, UserLevel: true}
	case TypeChatMessage:
		return PacketSpec{Type: typ, Direction: Both, Profile: ProfileIMv2, UserLevel: true, Ack: TypeChatMessageAck}
	case TypeChatMessageDelta:
		return PacketSpec{Type: typ, Direction: ToConnector, Profile: ProfileIMv2, UserLevel: true}
	case TypeChatMessageAck:
		return PacketSpec{Type: typ, Direction: Both, Profile: ProfileIMv2, UserLevel: true, IsAck: true}
	case TypeChatActivity:
		return PacketSpec{Type: typ, Direction: ToConnector, Profile: ProfileIMv2, UserLevel: true}
	}
	return PacketSpec{}
}

// Negotiated is the result of profile negotiation for one connection or
// channel: hello supported_profiles ∩ Card supports.profiles, loaded with the
// catalog entries of those Profiles. It is immutable and safe for concurrent
// use; a change of profiles means building a new one.
type Negotiated struct {
	profiles []Profile
	packets  map[string]PacketSpec
}

// Negotiate intersects the Profiles xAgent supports (hello
// supported_profiles) with the Card's supports.profiles, in the Card's order.
// Profiles missing from the standard catalog are kept when both sides name
// them, but contribute no packet types.
func Negotiate(card *Card, supported []Profile) *Negotiated {
	var cardProfiles []Profile
	if card != nil {
		cardProfiles = card.Supports.Profiles
	}
	return NegotiateProfiles(cardProfiles, supported)
}

// NegotiateProfiles is Negotiate over two plain lists; the result keeps the
// order of declared.
func NegotiateProfiles(declared, supported []Profile) *Negotiated {
	n := &Negotiated{packets: map[string]PacketSpec{}}
	for _, p := range commonPackets() {
		n.packets[p.Type] = p
	}
	for _, p := range declared {
		if !slices.Contains(supported, p) || slices.Contains(n.profiles, p) {
			continue
		}
		n.profiles = append(n.profiles, p)
		if spec, ok := LookupProfile(p); ok {
			for _, ps := range spec.Packets {
				n.packets[ps.Type] = ps
			}
		}
	}
	return n
}

// Profiles returns the negotiated Profiles (a copy).
func (n *Negotiated) Profiles() []Profile { return slices.Clone(n.profiles) }

// Has reports whether p was negotiated.
func (n *Negotiated) Has(p Profile) bool { return slices.Contains(n.profiles, p) }

// Empty reports whether no Profile was negotiated.
func (n *Negotiated) Empty() bool { return len(n.profiles) == 0 }

// Allows reports whether a packet of type typ may travel in direction d on a
// channel with this negotiation: common packets always, Profile packets only
// when their Profile is negotiated and in their declared direction. Anything
// else is filtered silently by the caller (IM v2 section 10).
func (n *Negotiated) Allows(typ string, d Direction) bool {
	p, ok := n.packets[typ]
	return ok && p.Direction&d == d && d != 0
}

// AllowsOutbound reports whether an xAgent-side projection of payload type
// typ may be written to the virtual message channel of this negotiation.
func (n *Negotiated) AllowsOutbound(typ string) bool {
	for _, id := range n.profiles {
		if spec, ok := LookupProfile(id); ok && slices.Contains(spec.OutboundPayloadTypes, typ) {
			return n.Allows(typ, ToConnector)
		}
	}
	return false
}
