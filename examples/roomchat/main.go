// Command roomchat is the smallest complete connector on the xconn SDK: an
// in-process fake chat room. People post with POST /room/{room}/say
// ({"text": "..."}); the agent's replies are listed by GET /room/{room}/said.
//
//	go run ./examples/roomchat --listen 127.0.0.1:8080 --data /tmp/roomchat --api-key KEY
package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Login is the sign-in form: the SDK derives the Card's room_login fields
// from it and hands the handler a checked value.
type Login struct {
	Room       string `json:"room" label:"Room" placeholder:"lobby" help:"The room to join."`
	AccessCode string `json:"access_code" label:"Access code" secret:"true" help:"The room's code; the first sign-in sets it."`
}

// Binding is what a channel keeps after sign-in (sealed by the SDK).
type Binding struct {
	Room string `json:"room"`
	Code string `json:"code" secret:"true"`
}

// Say is room_message_send's input and POST /say's body.
type Say struct {
	Text string `json:"text" desc:"Text to post in the room."`
}

// room is the fake chat room: its code (set by the first sign-in) and the
// last 100 things the agent said in it.
type room struct {
	code string
	mu   sync.Mutex
	said []string
}

func (r *room) say(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.said = append(r.said[max(0, len(r.said)-99):], text)
}

// join returns the room if code is its access code.
func join(rooms *sync.Map, name, code string) (*room, error) {
	v, _ := rooms.LoadOrStore(name, &room{code: code})
	if r := v.(*room); subtle.ConstantTimeCompare([]byte(r.code), []byte(code)) == 1 {
		return r, nil
	}
	return nil, protocol.Errorf(protocol.CodeInvalidAuthInput, "wrong access code for room %s", name)
}

const skill = "# Room Chat\n\nEach user message is one line posted in a chat room. Answer briefly; " +
	"use room_message_send only to post something unprompted.\n"

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	data := flag.String("data", "roomchat-data", "data directory: SQLite store, keys, file cache")
	apiKey := flag.String("api-key", os.Getenv("XCONN_API_KEY"), "system API key xAgent presents (env XCONN_API_KEY)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err == nil {
		err = run(ctx, ln, *data, *apiKey)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "roomchat:", err)
		os.Exit(1)
	}
}

// run serves the connector on ln until ctx ends; it closes ln.
func run(ctx context.Context, ln net.Listener, data, apiKey string) error {
	var rooms sync.Map // name → *room
	srv, err := connector.New(connector.Options{DataDir: data, APIKey: apiKey, Skill: []byte(skill), Logger: slog.Default(),
		Identity: connector.Identity{CardID: "im.roomchat", Name: "Room Chat", Provider: "roomchat",
			TargetType: protocol.TargetIM, Description: "Chat with the people in a room."}})
	if err != nil {
		ln.Close()
		return err
	}
	// Registration errors also fail Start, which Serve runs: one check at the end.
	connector.AddForm(srv, "room_login", func(ctx context.Context, ch *connector.Channel, in Login) (connector.Account[Binding], error) {
		return connector.Account[Binding]{Binding: Binding{Room: in.Room, Code: in.AccessCode}, DisplayName: in.Room}, nil
	}, connector.FlowOptions{Title: "Join a room", Default: true})
	clients, _ := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b Binding, _ connector.ClientReason) (*room, error) {
		return join(&rooms, b.Room, b.Code) // checked before the channel reports authenticated
	})
	byRoom, _ := connector.AddConsumer(srv, connector.Consumer[string, Binding]{Key: func(b Binding) string { return b.Room }})
	connector.AddTool(srv, "room_message_send", func(ctx context.Context, call *connector.Call, in Say) (Say, error) {
		r, err := clients.Get(call.Channel)
		if err == nil {
			r.say(in.Text)
		}
		return in, err
	}, connector.ToolOptions{Title: "Post in the room", Description: "Post a message in the room.", SideEffect: true})
	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
		r, err := clients.Get(ch)
		if err == nil {
			r.say(m.Text) // the SDK acks accepted only after this returns nil
		}
		return err
	})
	srv.Handle("POST /room/{room}/say", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in Say
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.Text == "" {
			http.Error(w, `want {"text": "..."}`, http.StatusBadRequest)
			return
		}
		// Durable in the outbox of every channel of the room before 202.
		n, err := byRoom.Members(r.PathValue("room")).Publish(r.Context(), connector.UserMessage{Text: in.Text}, nil)
		switch {
		case err != nil:
			http.Error(w, "not stored: "+err.Error(), http.StatusServiceUnavailable)
		case n == 0:
			http.Error(w, "nobody is signed in to this room", http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	srv.Handle("GET /room/{room}/said", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		said := []string{}
		if rm, ok := rooms.Load(r.PathValue("room")); ok {
			rm.(*room).mu.Lock()
			said = append(said, rm.(*room).said...)
			rm.(*room).mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(said)
	}))
	return srv.Serve(ctx, ln)
}
