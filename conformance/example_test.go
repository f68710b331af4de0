package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/internal/fixture"
)

// Check a Connector Server and print the summary line. Here the Connector is
// the package's test fixture; point Check at any Base URL instead.
func ExampleCheck() {
	fx := fixture.New(fixture.Options{APIKey: "example-key"})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	defer fx.Close()

	rep, err := conformance.Check(context.Background(), srv.URL, conformance.Options{
		APIKey:    "example-key",
		AuthFlow:  fixture.FormFlow,
		AuthInput: map[string]string{"room": "lobby", "access_code": "0000-example"},
		// Make the target send a message on the signed-in channel: here the
		// fixture's fake target; from a connector's tests, its own fake.
		Inbound: func(_ context.Context, channelID string) error {
			return fx.SendInbound(channelID, "hello from the target")
		},
		// The one tool the suite may invoke, and its arguments.
		Tool:     fixture.ToolID,
		ToolArgs: json.RawMessage(`{"text":"hello"}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Summary(), "ok:", rep.OK())
	// Output: 117 passed, 0 failed, 4 skipped ok: true
}

// List the requirements on IM Profile v2 acks without touching the network.
func ExampleSelect() {
	reqs, err := conformance.Select([]string{"imv2.ack-*"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = conformance.WriteList(os.Stdout, reqs[:1])
	// Output:
	// imv2.ack-accepted                    MUST   has-authenticated-channel  IM v2 §7           A final chat.message without deltas gets chat.message.ack accepted with reply_to = its packet_id, its channel and its message_id
	// 1 requirements
}
