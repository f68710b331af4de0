// Package e2e runs a connector's standard end-to-end test against its fake
// target, so that the test is a table of the fake's hooks: [Run] with a
// [Target] runs the conformance suite signed in to the fake (with the fake
// writing the inbound messages the suite asks for), a real host (package
// host) with the echo agent answering what a person writes exactly once,
// the connector killed with SIGKILL in the middle of a streamed answer and
// started again on its data directory (in a child process: the test binary
// run again), the assistant side over a bare data-plane client, and the
// secret checks over every log line of the connector and the host, every
// packet the connector sends and every refusal.
//
// A connector's e2e test, whole:
//
//	func TestE2E(t *testing.T) {
//		e2e.Run(t, e2e.Target{
//			New: e2e.Build(telegram.New, func(env e2e.Env) telegram.Options {
//				return telegram.Options{SDK: env.SDK, APIURL: env.Fake}
//			}),
//			Fake: func(tb testing.TB, _ string) *e2e.Fake {
//				f, url := startFakeBotAPI(tb)
//				return &e2e.Fake{Addr: url,
//					Say:  func(ctx context.Context, text string) error { f.SendText(token, chat, text); return nil },
//					Said: func(ctx context.Context) ([]string, error) { return texts(f.Sent(chat)), nil },
//					Streams: true, SayWhileDown: true}
//			},
//			SignIn:  e2e.SignIn{Flow: "telegram_bot_binding", Input: map[string]string{"bot_token": token, "chat_id": "42"}},
//			Secrets: e2e.Secrets{token},
//			Tool:    "telegram_message_send", ToolArgs: json.RawMessage(`{"text": "hi"}`),
//		})
//	}
//
// The same parts serve a connector's own tests: [Start] serves the
// connector in the test's process ([Conn]: its URL, its logs, Stop,
// Restart), [Conn.Dial] connects a [Client] that plays the host's side in
// one line per step (SignIn, Delta, Final, Put, Fetch, ExpectAccept),
// [StartHost] runs a real host that counts acks and checks packets for
// secrets, [Eventually] and [Await] wait on conditions, and [Secrets] finds
// a secret in any text.
//
// The crash scenario runs the test again in a child process, with -test.run
// naming the test that called Run and the connector's listener inherited,
// so that the address survives the kill; there Run serves the connector
// (built by Target.New from [Env] alone) until SIGTERM instead of testing.
// It needs a Unix system; elsewhere it is skipped.
//
// Everything the kit starts stops when the test ends, and every wait is
// bounded by [Wait].
package e2e
