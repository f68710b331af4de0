package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/mcp"
)

type signinView struct {
	SignInID   string `json:"sign_in_id"`
	Status     string `json:"status"`
	QRCodeText string `json:"qr_code_text"`
	Done       bool   `json:"done"`
	Channel    *struct {
		ChannelID     string `json:"connector_channel_id"`
		Authenticated bool   `json:"authenticated"`
	} `json:"channel"`
}

// TestQRSignIn signs a channel in by the web chat's QR flow through the
// Go SDK client: the QR code comes back as a PNG image block, a browser
// opens its URL and confirms, channel_sign_in_status reports the channel,
// and the connector's tool is listed (tools/list_changed).
func TestQRSignIn(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	res, text := c.mustCall(mcp.ToolSignIn, map[string]any{"flow_id": webchat.FlowQR}) // the only connector: no card id
	var v signinView
	if err := json.Unmarshal([]byte(text), &v); err != nil || v.SignInID == "" || v.Done {
		t.Fatalf("channel_sign_in: %s", text)
	}
	if !strings.HasPrefix(v.QRCodeText, s.baseURL+"/webchat/login/") {
		t.Fatalf("qr_code_text %q", v.QRCodeText)
	}
	var img *sdk.ImageContent
	for _, ct := range res.Content {
		if ic, ok := ct.(*sdk.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" {
		t.Fatalf("no PNG image block in %d contents", len(res.Content))
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img.Data)); err != nil || cfg.Width < 64 {
		t.Fatalf("image block is not a QR PNG: %v %+v", err, cfg)
	}

	// A phone scans the code: opens the URL and confirms.
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	phone := &http.Client{Jar: jar, Transport: tr}
	r, err := phone.Get(v.QRCodeText)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	r, err = phone.Post(v.QRCodeText, "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()

	for !v.Done {
		_, text = c.mustCall(mcp.ToolSignInStatus, map[string]any{"sign_in_id": v.SignInID, "wait_seconds": 5})
		v = signinView{}
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
	}
	if v.Status != "authenticated" || v.Channel == nil || !v.Channel.Authenticated || v.Channel.ChannelID == "" {
		t.Fatalf("final state %s", text)
	}
	c.waitTool(webchat.ToolSend)

	// Sign out: the tool goes away, the channel stays listed, signed out.
	c.mustCall(mcp.ToolSignOut, map[string]any{"connector_channel_id": v.Channel.ChannelID})
	_, text = c.mustCall(mcp.ToolChannelsList, nil)
	if !strings.Contains(text, `"authenticated":false`) {
		t.Fatalf("after sign-out: %s", text)
	}
	// The tool is withdrawn (tools/list_changed), or refuses the channel.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sres, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: webchat.ToolSend, Arguments: map[string]any{"text": "x", "connector_channel_id": v.Channel.ChannelID}})
	if err == nil && !sres.IsError {
		t.Fatal("sent on a signed-out channel")
	}
}

func TestSignInErrors(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown connector", map[string]any{"connector_card_id": "im.nope"}, "connection_not_found"},
		{"unknown flow", map[string]any{"flow_id": "nope"}, "auth_flow_not_found"},
		{"missing field", map[string]any{"flow_id": webchat.FlowRoom, "input": map[string]string{"room": "r"}}, "access_code"},
		{"bad input type", map[string]any{"flow_id": webchat.FlowRoom, "input": []int{1}}, "invalid_arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, text := c.call(mcp.ToolSignIn, tc.args)
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Fatalf("%v %s, want an error with %q", res.IsError, text, tc.want)
			}
		})
	}
	res, text := c.call(mcp.ToolSignInStatus, map[string]any{"sign_in_id": "signin_unknown"})
	if !res.IsError || !strings.Contains(text, "auth_session_not_found") {
		t.Fatalf("unknown sign-in: %s", text)
	}
}
