package connector_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// chatAPI stands for a target's client: a chat whose bot can post and edit
// messages, at most 20 edits each, 40 characters each.
type chatAPI struct {
	mu   sync.Mutex
	msgs []string
}

func (c *chatAPI) post(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, text)
	return len(c.msgs) // the target's message id
}

func (c *chatAPI) edit(id int, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 1 || id > len(c.msgs) {
		return errors.New("message to edit not found")
	}
	c.msgs[id-1] = text
	return nil
}

// A connector streams replies by editing one target message: it gives the
// EditStream its target's calls (post, edit, send a file) and limits, and
// registers Delta and Final as its IM v2 handlers.
func ExampleEditStream() {
	chat := &chatAPI{}
	stream, err := connector.NewEditStream(connector.EditStreamOptions[int]{
		Send: func(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (int, error) {
			return chat.post(text), nil
		},
		Edit: func(ctx context.Context, ch *connector.Channel, id int, text string) error {
			if err := chat.edit(id, text); err != nil {
				return fmt.Errorf("%w: %v", connector.ErrNotEditable, err) // post the final anew
			}
			return nil
		},
		SendFile: func(ctx context.Context, ch *connector.Channel, part connector.MessagePart, f *connector.File) (int, error) {
			return chat.post("[" + f.Filename + "]"), nil // upload f.Open()'s bytes to the target
		},
		Limit:    connector.TextLimit{Max: 40, Unit: connector.TextUnitUTF16},
		MaxEdits: 20,
		Interval: time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	_, host, ch, stop := exampleConnector(func(srv *connector.Server) {
		srv.OnAssistantDelta(stream.Delta)
		srv.OnAssistantMessage(stream.Final) // acked "accepted" once every part and file landed
	})
	defer stop()

	// What xAgent does: a streamed answer, then its final.
	ctx := context.Background()
	for i, text := range []string{"Streaming ", "an answer"} {
		d, _ := connectortest.Packet(protocol.TypeChatMessageDelta, ch, protocol.ChatDeltaPayload{MessageID: "a1", Sequence: int64(i + 1), Text: text})
		_ = host.Send(ctx, d)
		time.Sleep(5 * time.Millisecond)
	}
	final, _ := connectortest.Packet(protocol.TypeChatMessage, ch, protocol.ChatMessagePayload{MessageID: "a1",
		Text: "Streaming an answer, complete, and long enough for two messages."})
	ack, _ := host.RoundTrip(ctx, final)
	var a protocol.ChatAckPayload
	_ = ack.DecodePayload(&a)
	fmt.Println(a.Status)
	for _, m := range chat.msgs {
		fmt.Printf("%q\n", m)
	}
	// Output:
	// accepted
	// "Streaming an answer, complete, and long "
	// "enough for two messages."
}

// exampleConnector starts a small connector (a form sign-in, then what
// register adds) and a host-side client signed in on one channel, for the
// examples that play xAgent's part.
func exampleConnector(register func(srv *connector.Server)) (srv *connector.Server, host *connectortest.Client, channel string, stop func()) {
	dir, _ := os.MkdirTemp("", "xconn-example-")
	var err error
	srv, err = connector.New(connector.Options{DataDir: dir, Skill: []byte("# Chat\n\nTalk.\n"),
		Identity: connector.Identity{CardID: "im.chat", Name: "Chat", Provider: "chat", TargetType: protocol.TargetIM}})
	if err != nil {
		log.Fatal(err)
	}
	_ = connector.AddForm(srv, "chat_login", func(ctx context.Context, ch *connector.Channel, in struct {
		Name string `json:"name"`
	}) (connector.Account[string], error) {
		return connector.Account[string]{Binding: in.Name}, nil
	}, connector.FlowOptions{})
	register(srv)
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	host, _, err = connectortest.Connect(ctx, hs.URL, "")
	if err != nil {
		log.Fatal(err)
	}
	open, _ := host.Open(ctx, "")
	_, _ = host.SignInForm(ctx, open.ConnectorChannelID, "chat_login", map[string]string{"name": "ann"})
	return srv, host, open.ConnectorChannelID, func() {
		host.Close()
		hs.Close()
		_ = srv.Close(ctx)
		os.RemoveAll(dir)
	}
}

// The send tool every chat connector has, on the EditStream's target
// calls: the connector declares its input type (its tags describe the
// fields to the model) and says where the text and the file are.
func ExampleAddSendTool() {
	type SendInput struct {
		Text string            `json:"text" desc:"Text to post in the chat (split beyond 40 characters)."`
		File *connector.Upload `json:"file,omitempty" desc:"Optional file to post after the text."`
	}
	chat := &chatAPI{}
	stream, _ := connector.NewEditStream(connector.EditStreamOptions[int]{
		Send: func(ctx context.Context, ch *connector.Channel, part connector.MessagePart, text string) (int, error) {
			return chat.post(text), nil
		},
		Edit: func(ctx context.Context, ch *connector.Channel, id int, text string) error {
			return chat.edit(id, text)
		},
		Limit: connector.TextLimit{Max: 40},
	})
	_, host, ch, stop := exampleConnector(func(srv *connector.Server) {
		_ = connector.AddSendTool(srv, "chat_message_send", stream, func(in SendInput) (string, *connector.Upload) { return in.Text, in.File },
			connector.ToolOptions{Description: "Post in the chat.", SideEffect: true})
		srv.OnAssistantDelta(stream.Delta)
		srv.OnAssistantMessage(stream.Final)
	})
	defer stop()
	res, err := connectortest.Invoke[connector.SendResult[int]](context.Background(), host, ch, "chat_message_send",
		map[string]any{"text": "A reminder for everyone: the meeting moved to Thursday at ten."})
	fmt.Println(res.Status, res.MessageIDs, err, len(chat.msgs))
	// Output: sent [1 2] <nil> 2
}
