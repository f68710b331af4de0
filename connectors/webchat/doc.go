// Package webchat is the web chat connector of xconn (Card id im.webchat,
// provider webchat, Profile xagent.im.v2): a chat page in the browser,
// connected to an agent through the xAgent Connector protocol 3.0.
//
// It is only target-specific code on the connector SDK
// (github.com/xconn/xconn/connector): an Identity from which the SDK
// derives the Card, the Skill (connector-im-webchat), two sign-in flows,
// one tool, a channel client (the channel's page in the browsers) and the
// web side, served by the SDK server itself beside the protocol endpoints.
//
//   - webchat_qr_login (qr_login): the QR code holds the absolute login URL
//     <public-url>/webchat/login/<one-time-token>. A GET of it shows a
//     confirm page (status scanned); the Confirm button POSTs to the same
//     URL (status authenticated), binds the browser's session cookie to the
//     channel and redirects to the chat page. Links expire after
//     DefaultLoginTTL; auth.status with refresh=true issues a new one.
//   - webchat_room (form): fields room and access_code (secret). The
//     channel is authenticated at once; the room is then reachable at
//     <public-url>/webchat/rooms/<room> by anyone who enters the access
//     code. The code lives in the channel's binding, which the store keeps
//     encrypted; it is compared in constant time and never echoed.
//   - webchat_message_send (text): a proactive assistant message to the
//     page, idempotent by tool call id.
//
// The web side (cookie sessions, no API key) serves under /webchat/: the
// chat page (plain HTML, CSS and JavaScript embedded in the binary), POST
// /webchat/api/messages (JSON {"text": ...} or multipart text + file, 202
// with the inbound message_id) and GET /webchat/api/events, a stream of
// Server-Sent Events of types delta, message, activity and status. Deltas
// render live and the final message replaces them; activity shows
// "thinking…" or "using <tool>…"; files appear as links or inline images
// (GET /webchat/media/<file_ref>). POST /webchat/logout signs one browser
// out; GET / (and /favicon.ico) lead to the chat.
//
// Each channel's complete messages are kept in a HistoryStore (the SDK's
// store when it is a *store.DB), bounded in count and bytes, and replayed
// to every stream that opens, so a chat survives reloads and restarts.
// Status events say what the page can rely on: StateConnected while an
// xAgent data plane serves the channel, StateAgentOffline while none does
// (messages wait in the durable outbox), StateSignedOut and StateReplaced;
// every stream checks once a second.
//
// Limits (all with defaults, see the Default* constants): upload size and
// a per-session upload quota, text size, browser sessions (count, per
// client address, lifetime), event streams (in all, per chat, per client
// address), the per-stream buffer (a client that falls behind is
// disconnected and replays the history on reconnect), the history per
// channel, wrong access codes per client address and room and per client
// address. A room that is not open answers like a wrong code.
//
// New returns a Connector; its Server runs both sides
// (Server().ListenAndServe, or Serve on a listener) and ends the browsers'
// event streams first when it closes. For a web side on a listener of its
// own, set Options.SeparateWeb and serve WebHandler there.
package webchat
