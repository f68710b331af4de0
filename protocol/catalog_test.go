package protocol

import (
	"slices"
	"testing"
)

func TestNegotiate(t *testing.T) {
	card := &Card{Supports: Supports{Profiles: []Profile{ProfileIMv2, "x.custom.v1"}}}
	tests := []struct {
		name      string
		supported []Profile
		want      []Profile
	}{
		{"both", []Profile{ProfileIMv1, ProfileIMv2}, []Profile{ProfileIMv2}},
		{"none", []Profile{ProfileIMv1}, nil},
		{"empty hello", nil, nil},
		{"extension both sides", []Profile{"x.custom.v1", ProfileIMv2}, []Profile{ProfileIMv2, "x.custom.v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Negotiate(card, tt.supported)
			if got := n.Profiles(); !slices.Equal(got, tt.want) {
				t.Fatalf("Profiles = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNegotiatedAllows(t *testing.T) {
	card := &Card{Supports: Supports{Profiles: []Profile{ProfileIMv2}}}
	im2 := Negotiate(card, []Profile{ProfileIMv1, ProfileIMv2})
	none := Negotiate(card, []Profile{ProfileIMv1})
	tests := []struct {
		n    *Negotiated
		typ  string
		dir  Direction
		want bool
	}{
		{im2, TypeChatMessage, ToHost, true},
		{im2, TypeChatMessage, ToConnector, true},
		{im2, TypeChatMessageDelta, ToConnector, true},
		{im2, TypeChatMessageDelta, ToHost, false}, // a Connector never sends deltas
		{im2, TypeChatActivity, ToHost, false},
		{im2, TypeChatMessageAck, ToHost, true},
		{im2, TypeMessagePush, ToHost, false}, // IM v1 not negotiated
		{im2, TypeToolInvoke, ToConnector, true},
		{im2, TypeToolInvoke, ToHost, false},
		{im2, TypePing, ToHost, true},
		{im2, "session.sync_request", ToConnector, false},
		{im2, TypeChatMessage, 0, false},
		{none, TypeChatMessage, ToHost, false},
		{none, TypeHello, ToConnector, true},
	}
	for _, tt := range tests {
		if got := tt.n.Allows(tt.typ, tt.dir); got != tt.want {
			t.Errorf("Allows(%s, %v) with %v = %v, want %v", tt.typ, tt.dir, tt.n.Profiles(), got, tt.want)
		}
	}
	if !im2.AllowsOutbound(TypeChatMessageDelta) || im2.AllowsOutbound("session.sync_message") || none.AllowsOutbound(TypeChatMessage) {
		t.Error("AllowsOutbound is wrong")
	}
}

func TestCatalogProfiles(t *testing.T) {
	for _, p := range []Profile{ProfileIMv1, ProfileIMv2, ProfileDeviceV1} {
		spec, ok := LookupProfile(p)
		if !ok || len(spec.TargetTypes) == 0 {
			t.Fatalf("profile %s missing from the catalog", p)
		}
	}
	im2, _ := LookupProfile(ProfileIMv2)
	if !slices.Equal(im2.TargetTypes, []TargetType{TargetIM}) {
		t.Errorf("im.v2 target types = %v", im2.TargetTypes)
	}
	dev, _ := LookupProfile(ProfileDeviceV1)
	if !slices.Equal(dev.TargetTypes, []TargetType{TargetDevice}) {
		t.Errorf("device.v1 target types = %v", dev.TargetTypes)
	}
	// The catalog is data: mutating a returned value must not change it.
	im2.TargetTypes[0] = "x"
	again, _ := LookupProfile(ProfileIMv2)
	if again.TargetTypes[0] != TargetIM {
		t.Fatal("catalog shares mutable state with callers")
	}
}

func TestLookupPacket(t *testing.T) {
	tests := []struct {
		typ       string
		dir       Direction
		userLevel bool
		profile   Profile
	}{
		{TypeHello, ToConnector, false, ""},
		{TypeHelloAck, ToHost, false, ""},
		{TypeChannelOpen, ToConnector, true, ""},
		{TypeToolProgressPush, ToHost, true, ""},
		{TypePing, Both, false, ""},
		{TypeError, Both, false, ""},
		{TypeMessagePush, ToHost, true, ProfileIMv1},
		{TypeChatMessage, Both, true, ProfileIMv2},
		{TypeChatActivity, ToConnector, true, ProfileIMv2},
	}
	for _, tt := range tests {
		p, ok := LookupPacket(tt.typ)
		if !ok {
			t.Errorf("%s: not found", tt.typ)
			continue
		}
		if p.Direction != tt.dir || p.UserLevel != tt.userLevel || p.Profile != tt.profile {
			t.Errorf("%s = %+v", tt.typ, p)
		}
	}
	if _, ok := LookupPacket("session.sync_message"); ok {
		t.Error("internal envelope found in the catalog")
	}
}

// LookupPacket answers from a switch; it must agree with the catalog data
// for every packet type the catalog declares, and know no other.
func TestLookupPacketAgreesWithCatalog(t *testing.T) {
	all := commonPackets()
	for _, pr := range Profiles() {
		all = append(all, pr.Packets...)
	}
	for _, want := range all {
		got, ok := LookupPacket(want.Type)
		if !ok || got != want {
			t.Errorf("LookupPacket(%s) = %+v, %v; catalog says %+v", want.Type, got, ok, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { LookupPacket(TypeToolInvoke) }); n != 0 {
		t.Errorf("LookupPacket allocates %v times per call", n)
	}
}
