// Package admin is the operator page of an xconn host: which connectors
// are admitted (health, data-plane link, name and version), which user
// channels they serve and in what state (signed in, waiting for a QR scan
// with the QR shown, expired, revoked, …), each channel's queue depths and
// last message times, and the recent errors, updated live over
// Server-Sent Events.
//
// It is served on an address of its own ("xconn host --admin ADDR
// --admin-token-file FILE"), never on a connector's or a chat page's, and
// every request needs the operator token (at least [MinTokenLen]
// characters): as "Authorization: Bearer TOKEN" (scripts, curl), or typed
// once into the login form, which sets an HttpOnly, SameSite=Strict
// session cookie (an HMAC of its expiry under the token: changing the
// token ends every session). Tokens are compared in constant time.
//
// Nothing secret reaches the page or its event stream: no API key, form
// input, QR login text, message text or URL credentials; recorded error
// texts pass through [Options.Redact] and a connector's base URL is shown
// without userinfo, query or fragment. The one capability shown is a
// pending sign-in's QR image, which is what the operator is there to
// scan.
//
// Bounds: [Server] sets read-header (the handshake), read, write and idle
// timeouts; the error ring keeps [Options.MaxErrors] entries; at most
// [Options.MaxClients] event streams run at once, each for at most
// [StreamLifetime] (the browser reconnects), with a write deadline per
// event and a heartbeat.
//
// An [Admin] learns what happens from the host's hooks, wired by its
// owner: [Admin.OnEvent] (host.Options.OnEvent), [Admin.OnPacket]
// (host.Options.OnPacket), [Admin.TrackSignin] for each sign-in started,
// and [Admin.LogHandler] around the host's slog handler for warnings and
// errors. The rest (channels, queue depths, outbox counters) it reads from
// the host when a page or a stream asks.
package admin
