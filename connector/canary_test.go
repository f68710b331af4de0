package connector_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// TestCanarySecretsNeverLeak drives every surface with three canaries (the
// API key, a secret form field and the target token) and checks logs at
// debug level, Card, Skill, Descriptors, tool results and ack errors.
func TestCanarySecretsNeverLeak(t *testing.T) {
	t.Parallel()
	const (
		apiKey    = "canary-api-key-5b1e0d"
		formField = "canary-form-secret-91c2"
		target    = "canary-target-token-e4d7"
	)
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: apiKey, Canary: target})
	ctx := testCtx(t)
	c, _ := f.Connect(t, "")
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ch := ack.ConnectorChannelID
	// A failing sign-in with the secret in an unknown field, a wrong-typed
	// field and a successful one with the secret as the token.
	_, _ = c.Request(ctx, protocol.TypeAuthStart, ch, map[string]any{"flow_id": sdkfixture.FlowTokenForm,
		"input": map[string]any{"token": formField, "bogus": formField}})
	env, err := c.Request(ctx, protocol.TypeAuthStart, ch, map[string]any{"flow_id": sdkfixture.FlowTokenForm,
		"input": map[string]any{"token": formField, "name": "Ann"}})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, env, protocol.TypeAuthStartAck)
	arg := `{"connector_channel_id":"` + ch + `"}`
	for _, tool := range []string{sdkfixture.ToolLeakError, sdkfixture.ToolLeakResult, sdkfixture.ToolPanic, sdkfixture.ToolProgress} {
		invoke(t, c, ch, tool, arg, "")
	}
	_, _ = c.Request(ctx, protocol.TypeDescriptorGet, ch, nil)
	f.Target.SetFailNext(connector.Temporary(errors.New("target said " + target)))
	sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "m1", Text: "x"})
	f.Target.SetFailNext(protocol.Errorf(protocol.CodeTargetDeliveryFailed, "refused token %s", target))
	sendChat(t, c, ch, protocol.ChatMessagePayload{MessageID: "m2", Text: "x"})
	h, _ := f.Server.Channel(ch)
	_ = h.SetStatus(ctx, protocol.StatusDegraded)
	if _, err := c.NextOfType(ctx, protocol.TypeDescriptorPush); err != nil {
		t.Fatal(err)
	}
	f.Server.Logger().Debug("connector code logs its binding", "token", target, "value", "token="+target, "api_key", apiKey)
	_, _ = c.Request(ctx, protocol.TypeAuthLogout, ch, nil)

	_, card, _ := get(t, f.URL+protocol.PathCard, "")
	_, skill, _ := get(t, f.URL+protocol.PathSkill, "")
	_, health, _ := get(t, f.URL+protocol.PathHealth, apiKey)
	surfaces := map[string]string{
		"logs":   f.Logs.String(),
		"card":   string(card),
		"skill":  string(skill),
		"health": string(health),
		"wire":   strings.Join(c.Transcript(), "\n"),
	}
	if !strings.Contains(surfaces["logs"], `"level":"DEBUG"`) {
		t.Fatal("debug logs were not captured")
	}
	if !strings.Contains(surfaces["wire"], "tool.invoke.ack") || !strings.Contains(surfaces["wire"], "connection_descriptor") {
		t.Fatal("the wire transcript misses the surfaces under test")
	}
	// Every packet the connector sent passes the official schema and rules.
	for _, frame := range c.Transcript() {
		if _, vs := protocol.ValidatePacketJSON([]byte(frame), protocol.ToHost); len(vs) > 0 {
			t.Errorf("invalid packet from the connector: %v\n%s", vs, frame)
		}
	}
	for name, text := range surfaces {
		for _, canary := range []string{apiKey, formField, target} {
			if strings.Contains(text, canary) {
				t.Errorf("canary %q leaked into %s", canary, name)
			}
		}
	}
}
