package connector_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

func get(t *testing.T, url, key string) (int, []byte, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func TestControlPlane(t *testing.T) {
	t.Parallel()
	const key = "system-key-control"
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: key})
	code, body, _ := get(t, f.URL+protocol.PathCard, "")
	if code != 200 {
		t.Fatalf("card %d", code)
	}
	card, vs := protocol.ValidateCardJSON(body)
	if len(vs) > 0 {
		t.Fatalf("served Card invalid: %v", vs)
	}
	if !card.Security.APIKeyRequired {
		t.Fatal("api_key_required not set")
	}
	for _, tool := range card.Tools {
		var s struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(tool.InputSchema, &s)
		if _, ok := s.Properties[protocol.ChannelIDArgument]; !ok || !strings.Contains(strings.Join(s.Required, ","), protocol.ChannelIDArgument) {
			t.Fatalf("tool %s schema lacks the channel argument: %s", tool.ToolID, tool.InputSchema)
		}
	}
	code, body, hdr := get(t, f.URL+protocol.PathSkill, "")
	if code != 200 || string(body) != sdkfixture.FixtureSkillMD || !strings.HasPrefix(hdr.Get("Content-Type"), "text/markdown") {
		t.Fatalf("skill %d %q", code, body)
	}
	for _, p := range []string{protocol.PathHealth, "/metrics"} {
		if code, _, _ := get(t, f.URL+p, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without key: %d", p, code)
		}
		if code, _, _ := get(t, f.URL+p, "nope-nope-nope"); code != http.StatusForbidden {
			t.Errorf("%s wrong key: %d", p, code)
		}
	}
	code, body, _ = get(t, f.URL+protocol.PathHealth, key)
	var h protocol.HealthResponse
	if err := json.Unmarshal(body, &h); err != nil || code != 200 {
		t.Fatalf("health %d %s", code, body)
	}
	if h.Status != "ok" || h.ConnectorCardID != card.ConnectorCardID || h.ConnectorCardVersion != card.Connector.Version ||
		h.ProtocolVersion != card.ProtocolVersion || h.Build == nil || h.Build.BuildTime != card.Build.BuildTime ||
		h.Build.GitRev != card.Build.GitRev || h.Build.Version != card.Build.Version {
		t.Fatalf("health %+v vs card build %+v", h, card.Build)
	}
	// /ws: 401 without the key, 403 with a wrong one.
	ctx := testCtx(t)
	for k, want := range map[string]int{"": 401, "wrong-wrong-wrong": 403} {
		hdr := http.Header{}
		if k != "" {
			hdr.Set("Authorization", "Bearer "+k)
		}
		_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.URL, "http")+"/ws", &websocket.DialOptions{
			Subprotocols: []string{protocol.Subprotocol}, HTTPHeader: hdr})
		if err == nil || resp == nil || resp.StatusCode != want {
			t.Errorf("ws with key %q: %v %v", k, err, resp)
		}
	}
	c, _ := f.Connect(t, "")
	openSigned(t, c)
	code, body, _ = get(t, f.URL+"/metrics", key)
	if code != 200 || !strings.Contains(string(body), "xconn_connector_signins_total 1") ||
		!strings.Contains(string(body), `xconn_connector_packets_received_total{type="connector.hello"}`) ||
		!strings.Contains(string(body), `xconn_connector_outbox_pending{queue="connector.im.v2"} 0`) {
		t.Fatalf("metrics %d:\n%s", code, body)
	}
}

func TestSkillAbsentAndPathPrefix(t *testing.T) {
	t.Parallel()
	st := connectortest.NewStore(t)
	card := sdkfixture.FixtureCard(protocol.ProfileDeviceV1)
	card.Supports.TargetTypes = []protocol.TargetType{protocol.TargetDevice}
	card.Supports.Targets = []protocol.Target{{TargetType: protocol.TargetDevice, Provider: "adb", Label: "Phone"}}
	card.AuthFlows = nil
	srv, err := connector.New(connector.Options{Card: card, Store: st, PathPrefix: "/fx/", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		_ = srv.Close(context.Background())
		hs.Close()
	})
	if code, _, _ := get(t, hs.URL+"/fx"+protocol.PathSkill, ""); code != http.StatusNoContent {
		t.Errorf("absent skill: %d", code)
	}
	if code, _, _ := get(t, hs.URL+"/fx"+protocol.PathHealth, ""); code != 200 {
		t.Errorf("health without configured key: %d", code)
	}
	if code, _, _ := get(t, hs.URL+protocol.PathCard, ""); code != http.StatusNotFound {
		t.Errorf("card outside the prefix: %d", code)
	}
	code, body, _ := get(t, hs.URL+"/fx"+protocol.PathCard, "")
	if code != 200 || strings.Contains(string(body), `"api_key_required":true`) {
		t.Errorf("card %d %s", code, body)
	}
	c, err := connectortest.Dial(testCtx(t), hs.URL+"/fx", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Hello(testCtx(t), protocol.HelloPayload{ConnectorCardID: sdkfixture.FixtureCardID, ProtocolVersion: "3.0",
		SupportedProfiles: []protocol.Profile{protocol.ProfileDeviceV1}}); err != nil {
		t.Fatal(err)
	}
}

func TestStartRejectsInvalidConfiguration(t *testing.T) {
	t.Parallel()
	st := connectortest.NewStore(t)
	form := connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
		return connector.Binding{}, nil
	})
	cases := []struct {
		name  string
		setup func(s *connector.Server, c *protocol.Card)
		want  []string
	}{
		{"no handler for a flow and no message handler", func(s *connector.Server, c *protocol.Card) {}, []string{
			`auth_flows[0]: flow "token_form" has no handler`, "supports.profiles: declares xagent.im.v2 but no OnAssistantMessage"}},
		{"card errors", func(s *connector.Server, c *protocol.Card) {
			c.ConnectorCardID, c.Build.BuildTime = "", ""
			c.AuthFlows = nil
			c.Supports.Profiles = []protocol.Profile{protocol.ProfileDeviceV1}
		}, []string{"connector_card_id: is required", "build.build_time: is required"}},
		{"tool without handler and a flow of the wrong type", func(s *connector.Server, c *protocol.Card) {
			c.Supports.Profiles = []protocol.Profile{protocol.ProfileDeviceV1}
			c.Tools = []protocol.Tool{{ToolID: "orphan_tool"}}
			_ = s.AddAuthFlow(sdkfixture.FlowTokenForm, connector.QR(connector.QRFlow{}))
			_ = s.AddAuthFlow(sdkfixture.FlowQR, connector.QR(connector.QRFlow{}))
			_ = s.AddAuthFlow("not_in_card", form)
		}, []string{`tools[0]: tool "orphan_tool" has no handler`, `auth_flows[0].type: is "form" but the registered flow is "qr_login"`,
			`registered flow "not_in_card" is not declared`}},
		{"tool schema conflicting", func(s *connector.Server, c *protocol.Card) {
			c.Supports.Profiles = []protocol.Profile{protocol.ProfileDeviceV1}
			c.AuthFlows = nil
			_ = s.AddRawTool("bad_schema", func(ctx context.Context, call *connector.Call, a json.RawMessage) (json.RawMessage, error) {
				return nil, nil
			},
				connector.ToolOptions{InputSchema: json.RawMessage(`{"type":"object","properties":{"connector_channel_id":{"type":"integer"}}}`)})
		}, []string{"tools[bad_schema].input_schema"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			card := sdkfixture.FixtureCard()
			srv, err := connector.New(connector.Options{Card: card, Store: st, DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(srv, card)
			err = srv.Start(context.Background())
			if err == nil {
				_ = srv.Close(context.Background())
				t.Fatal("Start succeeded")
			}
			var vs protocol.Violations
			if !errors.As(err, &vs) && tc.name != "" {
				t.Logf("error is not Violations: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if err := srv.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := connector.New(connector.Options{Store: st}); err == nil {
		t.Error("New without a Card succeeded")
	}
	if _, err := connector.New(connector.Options{Card: sdkfixture.FixtureCard()}); err == nil {
		t.Error("New without a Store succeeded")
	}
}

func TestCloseClosesSocketsGracefully(t *testing.T) {
	t.Parallel()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{})
	c, _ := f.Connect(t, "")
	openSigned(t, c)
	f.Close()
	if st := c.CloseStatus(); st != websocket.StatusGoingAway {
		t.Fatalf("close status %v, want 1001", st)
	}
	if err := f.Server.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := f.Server.Start(context.Background()); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}
