package adb

import (
	"slices"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/connectors/adb/adbtest"
	"github.com/xconn/xconn/protocol"
)

// TestCard: the Card declares what the issue and Device Profile v1 §2
// name: device.adb, provider adb, label Android Device, target type
// device, profile xagent.device.v1, Skill connector-device-adb, the
// adb_device_binding form with its serial field and the eight tools.
func TestCard(t *testing.T) {
	_, addr := newFake(t)
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	card, err := connectortest.FetchCard(tctx(t), cn.URL, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if card.ConnectorCardID != CardID || !slices.Equal(card.Supports.TargetTypes, []string{protocol.TargetDevice}) ||
		!slices.Equal(card.Supports.Profiles, []protocol.Profile{protocol.ProfileDeviceV1}) {
		t.Fatalf("card %s %v %v", card.ConnectorCardID, card.Supports.TargetTypes, card.Supports.Profiles)
	}
	if tg := card.Supports.Targets; len(tg) != 1 || tg[0].Provider != Provider || tg[0].Label != Label || tg[0].TargetType != protocol.TargetDevice {
		t.Fatalf("targets %+v", tg)
	}
	f, ok := card.AuthFlow(FlowBinding)
	if !ok || f.Type != protocol.AuthFlowForm || len(f.Fields) != 1 || f.Fields[0].Name != "serial" || f.Fields[0].Secret {
		t.Fatalf("flow %+v", f)
	}
	var ids []string
	for _, tl := range card.Tools {
		ids = append(ids, tl.ToolID)
		if !slices.Equal(tl.RelatedSkillIDs, []string{SkillName}) || tl.Profile != protocol.ProfileDeviceV1 {
			t.Errorf("tool %s: skills %v profile %s", tl.ToolID, tl.RelatedSkillIDs, tl.Profile)
		}
		if strings.Contains(string(tl.InputSchema), "serial") {
			t.Errorf("tool %s takes a serial: %s", tl.ToolID, tl.InputSchema)
		}
	}
	want := []string{ToolStatus, ToolScreenshot, ToolUIDump, ToolTap, ToolSwipe, ToolTextInput, ToolKey, ToolAppLaunch}
	if !slices.Equal(ids, want) {
		t.Fatalf("tools %v, want %v", ids, want)
	}
	if !strings.HasPrefix(string(Skill()), "---\nname: "+SkillName+"\n") {
		t.Fatal("the Skill does not name connector-device-adb")
	}
}

// TestSignIn: a listed, authorised device binds the channel (display
// name: the model); every refusal says what to do.
func TestSignIn(t *testing.T) {
	f, addr := newFake(t)
	f.AddDevice(adbtest.Device{Serial: "R58M12ABCDE", State: "unauthorized"})
	f.AddDevice(adbtest.Device{Serial: "192.168.1.7:5555", State: "offline"})
	f.AddDevice(adbtest.Device{Serial: "NOPERM1", State: "no permissions"})
	cn := startConn(t, t.TempDir(), addr, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, st, err := signIn(t, cl, login)
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in: %+v, %v", st, err)
	}
	d := st.ConnectionDescriptor
	if d.Connection.Status != protocol.StatusConnected || d.Connection.TargetType != protocol.TargetDevice ||
		d.Target.DisplayName != "Pixel 7" || strings.Contains(d.Target.AccountHint, testSerial) {
		t.Fatalf("descriptor %+v %+v", d.Connection, d.Target)
	}
	for _, ts := range d.Tools {
		if ts.Status != protocol.ToolAvailable {
			t.Fatalf("tool %+v", ts)
		}
	}
	for _, tc := range []struct {
		serial string
		code   protocol.Code // ack error of auth.start, or "" for a failed status
		msg    string
	}{
		{"R58M12ABCDE", "", "accept the \"Allow USB debugging?\" RSA key prompt"},
		{"192.168.1.7:5555", "", "is offline"},
		{"NOPERM1", "", "udev"},
		{"nothere", protocol.CodeInvalidAuthInput, "check that `adb devices` lists it"},
		{"bad serial; rm", protocol.CodeInvalidAuthInput, "serial must be a device serial"},
		{testSerial, protocol.CodeInvalidAuthInput, "already bound to another channel"}, // exclusive to the first channel
	} {
		_, st, err := signIn(t, cl, map[string]string{"serial": tc.serial})
		if tc.code != "" {
			if !isCode(err, tc.code) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: %v, want %s with %q", tc.serial, err, tc.code, tc.msg)
			}
			continue
		}
		if err == nil || st == nil || st.Status != protocol.AuthFailed || !strings.Contains(st.Message, tc.msg) {
			t.Errorf("%s: %+v, %v; want failed with %q", tc.serial, st, err, tc.msg)
		}
	}
	// The first channel still has the device.
	if _, err := connectortest.Invoke[Status](tctx(t), cl.Client, ch, ToolStatus, nil); err != nil {
		t.Fatal(err)
	}
	// The ADB server is gone: a sign-in says how to start it.
	f.Close()
	_, st, err = signIn(t, cl, map[string]string{"serial": "other-1"})
	if err == nil || st == nil || !strings.Contains(st.Message, "adb start-server") {
		t.Fatalf("no ADB server: %+v, %v", st, err)
	}
	_ = connector.CodeDeviceOffline
}
