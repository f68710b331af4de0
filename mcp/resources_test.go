package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/xconn/xconn/mcp"
)

// TestResources: each channel's Descriptor and history are resources; a
// subscribed client is told (notifications/resources/updated) when a
// message arrives, and reads it in the history.
func TestResources(t *testing.T) {
	s := newSystem(t)
	c := s.connect()
	chID := c.signInRoom("res")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var descURI, histURI string
	deadline := time.Now().Add(10 * time.Second)
	for descURI == "" && time.Now().Before(deadline) {
		for r, err := range c.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasSuffix(r.URI, "/descriptor"):
				descURI = r.URI
			case strings.HasSuffix(r.URI, "/history"):
				histURI = r.URI
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if descURI == "" || histURI == "" {
		t.Fatal("the channel's resources are not listed")
	}
	rr, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: descURI})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Connection struct {
			ChannelID string `json:"connector_channel_id"`
			Status    string `json:"status"`
		} `json:"connection"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &d); err != nil || d.Connection.ChannelID != chID {
		t.Fatalf("descriptor %s: %v", rr.Contents[0].Text, err)
	}

	if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: histURI}); err != nil {
		t.Fatal(err)
	}
	b := s.browser("res", testAccessCode)
	id := b.post("notify me")
	select {
	case uri := <-c.updated:
		if uri != histURI {
			t.Fatalf("updated %s, want %s", uri, histURI)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated")
	}
	rr, err = c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: histURI})
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Messages []mcp.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &h); err != nil || len(h.Messages) != 1 || h.Messages[0].MessageID != id {
		t.Fatalf("history %s: %v", rr.Contents[0].Text, err)
	}
	// The history lists it before it is read; reading still hands it out.
	msgs, _ := c.readMessages(map[string]any{"wait_seconds": 5})
	if len(msgs) != 1 || msgs[0].MessageID != id {
		t.Fatalf("messages_read %+v", msgs)
	}

	if _, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "xconn://channels/nope/history"}); err == nil {
		t.Fatal("an unknown channel's history was read")
	}
}
