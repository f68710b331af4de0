package connector_test

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/xconn/xconn/connector"
)

// The build block of a Card: set it from BuildInfo, and release builds
// inject the values with -ldflags -X (see BuildInfo).
func ExampleBuildInfo() {
	b := connector.BuildInfo()
	fmt.Println(b.Version != "", b.GitTag != "", b.GitRev != "")
	fmt.Println(regexp.MustCompile(`^[0-9]{10}$`).MatchString(b.BuildTime)) // YYMMDDhhmm, UTC
	// Output:
	// true true true
	// true
}

// Unguessable ids for a connector's own records, such as inbound message
// ids handed to Channel.Publish.
func ExampleNewID() {
	id := connector.NewID("msg_")
	fmt.Println(strings.HasPrefix(id, "msg_"), len(id))
	// Output: true 30
}

// A Redactor scrubs known secret values from any text, for example an error
// a target returned before it is shown or stored.
func ExampleRedactor() {
	r := connector.NewRedactor(0)
	r.Add("tg-bot-123456:AAE")
	fmt.Println(r.Scrub(`POST https://api.telegram.org/bottg-bot-123456:AAE/sendMessage: 401`))
	// Output: POST https://api.telegram.org/bot[REDACTED]/sendMessage: 401
}

// A host or a connector's own logger with the SDK's redaction: secret
// looking keys are redacted, known values are scrubbed everywhere.
func ExampleNewRedactingHandler() {
	r := connector.NewRedactor(0)
	r.Add("room-access-code-42")
	text := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // stable output for the example
			}
			return a
		},
	})
	log := slog.New(connector.NewRedactingHandler(text, r))
	log.Info("joined room-access-code-42", "api_key", "k-1", "room", "lobby")
	// Output: level=INFO msg="joined [REDACTED]" api_key=[REDACTED] room=lobby
}
