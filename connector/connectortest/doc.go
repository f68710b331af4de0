// Package connectortest is the test kit for connector authors: it drives a
// Connector Server built on package connector (or any server speaking the
// protocol) the way an xAgent host does, over a real WebSocket, so that a
// connector's tests check what is on the wire and not the SDK's internals.
//
// A test serves its connector with net/http/httptest and then:
//
//   - [Connect] reads the Card, dials /ws with the API key and sends
//     connector.hello ([Dial] and [Client.Hello] do the steps one by one);
//   - [Client.Open] opens a channel (id "" for a new one);
//   - [Client.SignInForm] signs it in with a form flow and its input
//     ([Client.OpenAndSignIn] opens and signs in in one call);
//     [Client.SignInQR] starts a QR flow, hands the code's text to a confirm
//     callback that plays the user, and polls auth.status until
//     authenticated;
//   - [Invoke] calls a tool and decodes its result; a refusal is a
//     *protocol.Error with the wire code;
//   - [Client.ExpectMessage] waits for the next chat.message of a channel and
//     [Client.Ack] / [Client.Reject] acknowledge it;
//   - the assistant side, as a host sends an agent's answer:
//     [Client.SendActivity], [Client.SendDelta], [Client.SendFinal] (which
//     returns the connector's ack) and [Client.SendStream] (deltas, then the
//     final); [Client.Upload] puts a file on the transfer plane for a final
//     or a tool argument, and [Client.Download] fetches a download_url the
//     connector handed out;
//   - [Client.Request], [Client.Next] and [Client.NextOfType] reach every
//     other packet;
//   - [NewStore] opens a SQLite store in the test's directory.
//
// A short session (see the Example for a runnable one):
//
//	c, _, err := connectortest.Connect(ctx, srv.URL, apiKey)
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer c.Close()
//	open, err := c.Open(ctx, "")
//	ch := open.ConnectorChannelID
//	_, err = c.SignInForm(ctx, ch, "room_login", map[string]string{"room": "lobby", "access_code": "s3cret"})
//	out, err := connectortest.Invoke[SendResult](ctx, c, ch, "room_message_send", SendInput{Text: "hi"})
//	m, err := c.ExpectMessage(ctx, ch, 5*time.Second) // after the target said something
//	err = c.Ack(ctx, m, protocol.AckAccepted)
//
// Every Client method takes a context that bounds its wait; a Client owns one
// goroutine, which Close stops. The kit never reaches into the connector: a
// QR confirmation goes through the test's own code (for example the
// connector's Server.AuthComplete, or a fake target), passed in as confirm.
//
// For the whole protocol rather than one connector's behaviour, run the
// conformance suite (package conformance) against the same URL. Package
// e2e (connectortest/e2e) runs the standard end-to-end of a connector with
// its fake target (conformance, a real host with the echo agent, a crash in
// the middle of an answer, secret checks) from a table of the fake's hooks.
package connectortest
