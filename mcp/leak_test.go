package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/mcp"
	"github.com/xconn/xconn/testrig/sdkfixture"
)

// fixtureToken is the form secret the fixture's token flow takes.
const fixtureToken = "good-token-value"

// newFixtureSystem is a system on the SDK's fixture connector, whose
// target hands back a canary token as the channel's binding, embeds it in
// errors, results and progress, and whose form takes a secret token.
func newFixtureSystem(t *testing.T) (*system, *sdkfixture.Fixture) {
	t.Helper()
	f := sdkfixture.StartFixture(t, sdkfixture.FixtureOptions{APIKey: testAPIKey})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &system{t: t, dir: t.TempDir(), logs: &syncBuffer{}, baseURL: f.URL}
	s.secrets = append(s.secrets, f.Opts.Canary, fixtureToken, sdkfixture.BadToken)
	s.admit(ctx, slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), sdkfixture.FixtureCardID)
	return s, f
}

// TestNothingLeaks drives every path where a secret could come back to
// an MCP client: a refused sign-in that quotes the typed token, a good
// one, a tool error and a tool result holding the binding's token,
// progress quoting it, the channel's resources. Neither what the server
// sends (checked line by line on the wire when the client closes) nor
// the host's and server's logs (checked at the end) hold the API key,
// the form token or the binding's token. Progress reaches the client as
// notifications/progress, and the tools carry their annotations.
func TestNothingLeaks(t *testing.T) {
	s, _ := newFixtureSystem(t)
	c := s.connect()

	_, text := c.call(mcp.ToolSignIn, map[string]any{"connector_card_id": sdkfixture.FixtureCardID, "flow_id": sdkfixture.FlowTokenForm,
		"input": map[string]string{"token": sdkfixture.BadToken}})
	if strings.Contains(text, `"authenticated"`) {
		t.Fatalf("a bad token signed in: %s", text)
	}
	_, text = c.mustCall(mcp.ToolSignIn, map[string]any{"connector_card_id": sdkfixture.FixtureCardID, "flow_id": sdkfixture.FlowTokenForm,
		"input": map[string]string{"token": fixtureToken, "name": "Ann"}})
	if !strings.Contains(text, `"status":"authenticated"`) {
		t.Fatalf("sign-in: %s", text)
	}

	echo := c.waitTool(sdkfixture.ToolEcho)
	if a := echo.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint != nil || a.IdempotentHint || a.Title != "Echo" {
		t.Errorf("a connector tool without a mode: annotations %+v, want the MCP defaults with its title", a)
	}
	tools := c.toolNames()
	for _, tc := range []struct {
		name                              string
		readOnly, idempotent, destructive bool
	}{
		{mcp.ToolChannelsList, true, false, false},
		{mcp.ToolMessagesRead, false, false, false}, // it marks what it returns read
		{mcp.ToolMessageSend, false, false, false},  // a repeat sends again
		{mcp.ToolSignOut, false, true, true},
	} {
		a := tools[tc.name].Annotations
		if a == nil || a.ReadOnlyHint != tc.readOnly || a.IdempotentHint != tc.idempotent || a.DestructiveHint == nil || *a.DestructiveHint != tc.destructive {
			t.Errorf("%s annotations %+v", tc.name, a)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := &sdk.CallToolParams{Name: sdkfixture.ToolProgress, Arguments: map[string]any{}}
	params.SetProgressToken("prog-1")
	res, err := c.cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("progress tool: %v %+v", err, res)
	}
	var got []*sdk.ProgressNotificationParams
	for len(got) < 2 {
		select {
		case p := <-c.progress:
			got = append(got, p)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d progress notifications, want 2", len(got))
		}
	}
	if got[0].ProgressToken != "prog-1" || got[0].Message != "half way" || got[0].Progress != 50 || got[0].Total != 100 ||
		got[1].Progress <= got[0].Progress || !strings.HasPrefix(got[1].Message, "done soon") {
		t.Errorf("progress %+v then %+v", got[0], got[1])
	}
	// Without a progress token no notification is sent.
	c.mustCall(sdkfixture.ToolProgress, map[string]any{})
	select {
	case p := <-c.progress:
		t.Errorf("progress without a token: %+v", p)
	case <-time.After(300 * time.Millisecond):
	}

	if res, _ := c.call(sdkfixture.ToolLeakError, map[string]any{}); !res.IsError {
		t.Error("the failing tool did not fail")
	}
	c.call(sdkfixture.ToolLeakResult, map[string]any{})

	_, text = c.mustCall(mcp.ToolChannelsList, nil)
	var list struct {
		Channels []struct {
			DescriptorURI string `json:"descriptor_uri"`
			HistoryURI    string `json:"history_uri"`
		} `json:"channels"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil || len(list.Channels) != 1 {
		t.Fatalf("channels: %s", text)
	}
	for _, uri := range []string{list.Channels[0].DescriptorURI, list.Channels[0].HistoryURI} {
		if _, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err != nil {
			t.Errorf("read %s: %v", uri, err)
		}
	}
	if !strings.Contains(c.wire.String(), "half way") {
		t.Error("the wire record lacks the progress: the scan would see nothing")
	}
}
