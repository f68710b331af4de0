package connector_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// SendInput is the typed input of the example's tool; its JSON Schema is
// derived from the struct (desc tags become descriptions).
type SendInput struct {
	Text string `json:"text" desc:"Message text to post in the room."`
}

// SendResult is the tool's result.
type SendResult struct {
	Status string `json:"status"`
}

// A complete, small connector: a Card, a Skill, a form sign-in, one
// side-effecting tool, IM v2 delivery both ways, served over HTTP.
func Example() {
	dir, _ := os.MkdirTemp("", "xconn-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "xconn.db"), store.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	card := &protocol.Card{
		Schema: protocol.CardSchema, ProtocolVersion: protocol.ProtocolVersion,
		Build:           protocol.Build{Version: "0.1.0", BuildTime: "2612021200"},
		ConnectorCardID: "im.room",
		Connector:       protocol.CardInfo{Name: "Room", Version: "0.1.0"},
		Supports: protocol.Supports{
			TargetTypes: []protocol.TargetType{protocol.TargetIM},
			Targets:     []protocol.Target{{TargetType: protocol.TargetIM, Provider: "room", Label: "Room"}},
			Profiles:    []protocol.Profile{protocol.ProfileIMv2},
		},
		AuthFlows: []protocol.AuthFlow{{ID: "room_login", Type: protocol.AuthFlowForm, Fields: []protocol.AuthField{
			{Name: "room", Label: "Room", InputType: protocol.InputText, Required: true},
			{Name: "access_code", Label: "Access code", InputType: protocol.InputPassword, Required: true, Secret: true},
		}}},
	}
	skill := []byte("---\nname: connector-im-room\ndescription: Chat in a room.\n---\nUse room_message_send to post.\n")

	srv, err := connector.New(connector.Options{Card: card, Skill: skill, Store: db, APIKey: "example-system-key", DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	_ = connector.AddTool(srv, "room_message_send",
		func(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
			b, _ := call.Channel.Binding() // the room's target binding, never sent to xAgent
			_ = b
			return SendResult{Status: "sent"}, nil // arguments were validated before this runs
		}, connector.ToolOptions{Title: "Send", Description: "Post a message in the room.", Profile: protocol.ProfileIMv2, SideEffect: true})
	_ = srv.AddAuthFlow("room_login", connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
		return connector.Binding{Data: []byte(in.Secret("access_code")), DisplayName: "Room " + in.Get("room")}, nil
	}))
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		return nil // post m.Text and m.Files to the room; ack "accepted" only when this returns nil
	})
	// Inbound: ch.Publish(ctx, connector.UserMessage{MessageID: "target-id", Text: "hi"}) keeps the
	// message in the durable outbox until xAgent accepts it.

	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv) // or http.ListenAndServe("127.0.0.1:8080", srv)
	defer func() { _ = srv.Close(ctx); hs.Close() }()

	final := srv.Card()
	fmt.Println(final.Tools[0].ToolID, final.Security.APIKeyRequired,
		strings.Contains(string(final.Tools[0].InputSchema), protocol.ChannelIDArgument))
	// Output: room_message_send true true
}
