package connector_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// eventsSocket stands for a target's events connection (a Slack Socket
// Mode socket, a Discord gateway).
type eventsSocket struct{}

// errInvalidAuth stands for the target's refusal of the token.
var errInvalidAuth = errors.New("invalid_auth")

func dialEvents(ctx context.Context, token string) (*eventsSocket, error) {
	return &eventsSocket{}, nil
}
func (*eventsSocket) next(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }

type botBindingExample struct {
	Token  string `json:"token" secret:"true"`
	ChatID string `json:"chat_id"`
}

// A consumer reports reaching its target with Members.Connected and
// returns its failures: a dropped socket (an ordinary error) leaves the
// channels degraded until the SDK's restart reconnects; a refused token
// (ErrRevoked) marks them revoked and parks the consumer until a channel
// signs in again.
func ExampleMembers_Connected() {
	dir, _ := os.MkdirTemp("", "xconn-example-")
	defer os.RemoveAll(dir)
	srv, err := connector.New(connector.Options{DataDir: dir,
		Identity: connector.Identity{CardID: "im.bot", Name: "Bot", Provider: "bot", TargetType: protocol.TargetIM}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = connector.AddConsumer(srv, connector.Consumer[string, botBindingExample]{
		Key: func(b botBindingExample) string { return b.Token },
		Run: func(ctx context.Context, token string, m *connector.Members[botBindingExample]) error {
			sock, err := dialEvents(ctx, token)
			if errors.Is(err, errInvalidAuth) {
				return fmt.Errorf("bot: open events: %w", connector.ErrRevoked) // terminal: no restart
			}
			if err != nil {
				return err // degraded; the SDK dials again with backoff
			}
			m.Connected(ctx) // degraded channels are connected again
			for {
				text, err := sock.next(ctx)
				if err != nil {
					return err // the socket dropped: degraded until the next Connected
				}
				_, _ = m.Publish(ctx, connector.UserMessage{Text: text}, nil)
			}
		}})
	fmt.Println(err)
	// Output: <nil>
}

// TerminalStatus tells which errors end a consumer for good, and the
// status its channels take.
func ExampleTerminalStatus() {
	for _, err := range []error{
		fmt.Errorf("slack: apps.connections.open: invalid_auth: %w", connector.ErrRevoked),
		fmt.Errorf("wechat: getupdates: errcode -14: %w", connector.ErrBindingExpired),
		&connector.TerminalError{Status: protocol.StatusError, Err: errors.New("feishu: long connection: 403 forbidden")},
		errors.New("read tcp 127.0.0.1:1: connection reset by peer"),
	} {
		status, terminal := connector.TerminalStatus(err)
		fmt.Printf("%-5v %s\n", terminal, status)
	}
	// Output:
	// true  revoked
	// true  expired
	// true  error
	// false
}

// Channel.Publish is idempotent by MessageID within the dedupe window:
// use the target's own message id, and a window longer than the longest
// time the target may deliver an event again.
func ExampleChannel_Publish() {
	opts := connector.Options{
		DataDir:  os.TempDir(),
		Identity: connector.Identity{CardID: "im.bot", Name: "Bot", Provider: "bot", TargetType: protocol.TargetIM},
		// The target retries an unacknowledged webhook for up to 3 days.
		DedupeWindow: 4 * 24 * time.Hour,
	}
	fmt.Println(opts.DedupeWindow, connector.DefaultDedupeWindow, connector.DefaultDedupeHistory)
	// In a consumer or webhook handler, with the target's id of the message:
	//	err := ch.Publish(ctx, connector.UserMessage{MessageID: "tg-" + chatID + "-" + msgID, Text: text})
	// Output: 96h0m0s 24h0m0s 10000
}
