package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/xconn/xconn/conformance"
)

// Target is the table a connector's end-to-end test fills for [Run]: how
// to build the connector, how to start its fake target and play the people
// on it, and how to sign in. Everything else (the conformance run, a real
// host with the echo agent, the crash and restart, the secret checks) is
// the kit's.
type Target struct {
	// APIKey is the system API key the connector is served with; "" makes
	// a random one. It must never leak.
	APIKey string
	// New builds the connector (required). The crash test calls it in a
	// child process (the test binary run again), so it may use only its Env
	// and constants.
	New NewFunc
	// Fake starts the fake target for one scenario (required); connURL is
	// the connector's Base URL, for a target that lives in the connector
	// itself. The fake must stop when tb ends.
	Fake func(tb testing.TB, connURL string) *Fake
	// SignIn is the auth flow every scenario signs in with (required).
	SignIn SignIn
	// BadSignIn, when set, is a sign-in the connector must refuse: the host
	// scenario checks the refusal, that it leaves no channel, that nothing
	// is posted and that its secret values leak nowhere.
	BadSignIn *BadSignIn
	// Tool and ToolArgs name the side-effecting tool the conformance suite
	// invokes (tool.invoke, tool.idempotency); see conformance.Options.
	Tool     string
	ToolArgs json.RawMessage
	// Secrets are values besides APIKey and the secret fields of the
	// sign-in inputs that must never appear in a log line, a packet to the
	// host or an error (a token the fake issues, say).
	Secrets Secrets
	// MustPass lists conformance requirement IDs that must pass, besides
	// the kit's own list (auth.authenticated; tool.invoke with a Tool; the
	// inbound, redelivery and ack checks for a chat target).
	MustPass []string
	// MaySkip lists conformance requirement IDs the run may skip besides
	// those whose capability it lacks: what the Card does not declare
	// (profiles, flow types, tools), a Base URL path prefix, published files
	// and IM v1 pushes, an inbound hook or tool the Target does not give.
	MaySkip []string
}

// Fake is one running fake target, as the kit sees it: where the connector
// reaches it, and how a person writes and what the connector posted. A
// device or other non-chat target leaves Say and Said nil; the chat
// scenarios are then skipped.
type Fake struct {
	// Addr is Env.Fake for the connector: the fake's Base URL or address.
	Addr string
	// Say makes a person write text to the signed-in account, as a user
	// of the target would; the connector is expected to publish it. It
	// returns once the target has the message.
	Say func(ctx context.Context, text string) error
	// Said returns the texts the connector posted for the signed-in
	// account, oldest first, each as it reads now (after edits).
	Said func(ctx context.Context) ([]string, error)
	// Streams says that the connector shows an answer while it streams
	// (posts the first delta, then edits): before the kill the crash
	// scenario waits for the partial answer to show and lets the answer
	// stream on until an edit shows, proof that the connector recorded its
	// stream (if no edit shows, a partial left behind is tolerated).
	Streams bool
	// PartialAfterCrash tolerates, in the crash scenario only, the partial
	// answer that the killed stream left on the target (it is logged
	// instead). Without it the connector must pick the stream up again when
	// the answer comes again after the restart (the host's agent answers a
	// redelivered message anew, with the same message_id and its deltas from
	// sequence 1): its first delta edits the message posted before the
	// crash, as the connector's durable record of the stream says, rather
	// than posting another one.
	PartialAfterCrash bool
	// SayWhileDown says that the target keeps what a person writes while
	// the connector is down and hands it over when the connector is back
	// (a polled API does; a push over a connection the connector holds does
	// not). The restart scenarios then write a message during the downtime.
	SayWhileDown bool
	// Volatile says that the target lives in the connector's process (a
	// room inside the connector): what it showed is gone after a restart,
	// and nobody can write while it is down.
	Volatile bool
	// Connected, when set, reports whether the connector holds its
	// connection to the target (a long connection, an event socket); after
	// stopping the connector the kit requires that it closes, and waits
	// for that before the restart.
	Connected func() bool
	// Conformance, when set, checks more after the conformance run: of its
	// report, or of this fake (what the suite's tool did on the target).
	Conformance func(t *testing.T, rep *conformance.Report)
	// Secrets, when set, returns secrets the fake handed out during the
	// scenario (tokens it issued): at the end of the scenario they are
	// looked for where Target.Secrets are.
	Secrets func() Secrets
}

// SignIn is how the kit signs a channel in, from the conformance suite,
// the host and the wire scenario alike.
type SignIn struct {
	// Flow is the Card auth flow id.
	Flow string
	// Input is a form flow's input (field name to value); the values of
	// fields the Card marks secret are checked to leak nowhere.
	Input map[string]string
	// Confirm plays the user of a QR flow: given a code's text it scans and
	// confirms it (tells the fake the code was scanned, or opens the login
	// URL with [OpenURL]); it is called again for each refreshed code. Nil
	// for a form flow. The conformance suite confirms a QR flow by opening
	// the code's URL (conformance.Options.AuthOpenURL), whatever Confirm is.
	Confirm func(ctx context.Context, qrText string) error
}

// BadSignIn is a sign-in with SignIn.Flow that the connector must refuse.
type BadSignIn struct {
	// Input is the refused form input (a wrong token, a wrong code).
	Input map[string]string
	// Message is a part of the refusal the user must see.
	Message string
}

// OpenURL confirms a QR code whose text is a login URL by fetching it, as
// a phone's browser does after the scan; a status other than 200 is an
// error.
func OpenURL(ctx context.Context, qrText string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, qrText, nil)
	if err != nil {
		return err
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("e2e: QR URL: HTTP %d", res.StatusCode)
	}
	return nil
}
