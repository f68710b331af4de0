package connector_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// RoomLogin is the example's sign-in form: the Card's auth_flows[] entry is
// derived from it.
type RoomLogin struct {
	Room       string `json:"room" label:"Room" placeholder:"lobby"`
	AccessCode string `json:"access_code" label:"Access code" secret:"true"`
}

// RoomBinding is what a signed-in channel keeps (sealed by the SDK).
type RoomBinding struct {
	Room string `json:"room"`
	Code string `json:"code" secret:"true"`
}

// SendInput is the typed input of the example's tool; its JSON Schema is
// derived from the struct (desc tags become descriptions).
type SendInput struct {
	Text string `json:"text" desc:"Message text to post in the room."`
}

// SendResult is the tool's result.
type SendResult struct {
	Status string `json:"status"`
}

// exampleRoom is the per-channel client of the example: the channel's live
// connection to its room.
type exampleRoom struct{ name string }

// A complete, small connector declared in code: identity, a typed form
// sign-in, a per-channel client, one side-effecting tool and IM v2 delivery,
// served with ListenAndServe's graceful shutdown.
func Example() {
	dir, _ := os.MkdirTemp("", "xconn-example-")
	defer os.RemoveAll(dir)
	srv, err := connector.New(connector.Options{DataDir: dir, APIKey: "example-system-key",
		Skill:    []byte("# Room\n\nUse room_message_send to post.\n"),
		Identity: connector.Identity{CardID: "im.room", Name: "Room", Provider: "room", TargetType: protocol.TargetIM}})
	if err != nil {
		log.Fatal(err)
	}
	_ = connector.AddForm(srv, "room_login", func(ctx context.Context, ch *connector.Channel, in RoomLogin) (connector.Account[RoomBinding], error) {
		return connector.Account[RoomBinding]{Binding: RoomBinding{Room: in.Room, Code: in.AccessCode}, DisplayName: "Room " + in.Room}, nil
	}, connector.FlowOptions{Title: "Join a room"})
	rooms, _ := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b RoomBinding, _ connector.ClientReason) (*exampleRoom, error) {
		return &exampleRoom{name: b.Room}, nil // dial the room; an error fails the sign-in
	})
	_ = connector.AddTool(srv, "room_message_send",
		func(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
			r, err := rooms.Get(call.Channel) // a *exampleRoom: the type SetClient fixed
			if err != nil {
				return SendResult{}, err
			}
			_ = r                                  // post in.Text to r.name
			return SendResult{Status: "sent"}, nil // arguments were validated before this runs
		}, connector.ToolOptions{Title: "Send", Description: "Post a message in the room.", SideEffect: true})
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		return nil // post m.Text and m.Files to the room; ack "accepted" only when this returns nil
	})
	// Inbound: ch.Publish(ctx, connector.UserMessage{MessageID: "target-id", Text: "hi"}) keeps the
	// message in the durable outbox until xAgent accepts it.

	ctx, stop := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0") // ListenAndServe(ctx, "127.0.0.1:8080") in a real program
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	for srv.Card() == nil { // Serve starts the server first
		time.Sleep(time.Millisecond)
	}
	card := srv.Card()
	flow, _ := card.AuthFlow("room_login")
	fmt.Println(card.Tools[0].ToolID, card.Security.APIKeyRequired, card.Supports.Profiles)
	fmt.Println(flow.Fields[1].Name, flow.Fields[1].InputType, flow.Fields[1].Secret)
	stop() // SIGINT or SIGTERM do the same
	fmt.Println(<-served)
	// Output:
	// room_message_send true [xagent.im.v2]
	// access_code password true
	// <nil>
}
