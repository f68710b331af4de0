// Package slack is the Slack connector of xconn (Card id im.slack,
// provider slack, Profile xagent.im.v2): an agent in Slack through a Slack
// app's bot over Socket Mode, which needs no public URL, on the connector
// SDK (github.com/xconn/xconn/connector) and github.com/slack-go/slack
// with its socketmode package.
//
// Sign-in is the form flow slack_app_binding: app_token (the app-level
// token, xapp-, secret), bot_token (the Bot User OAuth Token, xoxb-,
// secret) and channel (optional: one conversation id; empty serves every
// DM and every mention of the bot). It checks the bot token (auth.test),
// the app-level token (apps.connections.open, which Socket Mode needs)
// and, with a channel, that the bot can read it (conversations.history),
// and fails otherwise with a secret-free message saying what to fix.
//
// Inbound: one Socket Mode connection per app token, shared by every
// channel signed in with it (an SDK Consumer). message and app_mention
// events of people (never of bots, so the connector's own posts do not
// loop back) written after the sign-in are published on the channels that
// serve them, with their files downloaded from url_private with the bot
// token; each envelope is acked to Slack only after the durable Publish,
// so an envelope Slack sends again (retry_attempt) is published once
// (the message id is the conversation and ts). Each time the connection
// is (re)established, conversations.history (and conversations.replies for
// threads that moved) is read from the last published ts kept in the
// channel state, so a message written while the connector was down or
// reconnecting is published too.
//
// Outbound: replies go through the SDK's EditStream: chat.postMessage in
// parts of at most 4,000 characters, in the thread of the message they
// answer (its reply context), a streamed reply posted on its first delta
// and edited with chat.update at most once per EditInterval, then files
// with files.getUploadURLExternal, the upload and
// files.completeUploadExternal. An HTTP 429 is waited out (its
// Retry-After, up to MaxRetryWait) and the method held for that long, so
// the next call waits instead of being refused again; a longer one rejects
// the message retryable. A token Slack refuses (invalid_auth,
// token_revoked, account_inactive) moves the channel to revoked.
//
// Activity: while the agent answers a message written in a thread, its
// activity is the bot's status there (assistant.threads.setStatus, which
// Slack documents for AI assistant threads); a refusal turns it off for
// the channel for StatusRetryAfter.
//
// Tool slack_message_send posts text, and optionally a file, to the
// channel's conversation.
//
// Tokens travel only in Authorization headers and form bodies, never in
// URLs; the SDK redacts both of the binding's tokens from every log line,
// error, ack and Descriptor.
package slack
