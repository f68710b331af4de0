// Package feishu is the Feishu (Lark) connector, im.feishu: one channel
// per self-built bot app, signed in with the app's App ID and App Secret
// (feishu_app_binding, verified with a tenant token) or by the QR
// one-click app registration (feishu_qr_create_app, qr.go), events from
// the app's long connection (one per app_id, shared through the SDK's
// Consumer) or, in webhook mode, from POSTs to WebhookPath (webhook.go),
// replies streamed by send-then-edit, files both ways and the tool
// feishu_message_send. README.md lists the unknowns of the fact sheet and
// how the connector tolerates them.
//
// The facts it is built on (endpoints, event shapes, error codes, rate
// limits) are in the fact sheet targets/feishu.md; feishutest is a fake
// Feishu written from the same facts.
//
// REST calls use net/http rather than the official SDK's client: the
// SDK's token cache is process-global and keyed by app_id, and its retry
// of a 99991663-class error re-sends the same cached token (fact sheet
// §1), while this connector must refresh the token, honour 429 and
// x-ogw-ratelimit-reset within a bound, and keep every call under the
// caller's context. The long connection speaks the official SDK's wire
// format with its types (see longconn.go for why not its client).
package feishu
