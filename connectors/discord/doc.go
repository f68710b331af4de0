// Package discord is the Discord connector of xconn (Card id im.discord,
// provider discord, Profile xagent.im.v2): an agent in a Discord guild
// text channel, thread or DM through a bot, on the connector SDK
// (github.com/xconn/xconn/connector) and github.com/bwmarrin/discordgo
// v0.28.1. No public URL is needed: messages arrive on the Gateway, a
// WebSocket the connector opens.
//
// Sign-in is the form flow discord_bot_binding: bot_token (password,
// secret) and channel_id (text). It checks the token (GET users/@me, a
// bot), that the bot sees the channel (GET channels/{id}) and that the
// Gateway accepts the intents the connector asks for (GUILD_MESSAGES,
// DIRECT_MESSAGES and the privileged MESSAGE_CONTENT): a close 4014
// (disallowed intents) fails the sign-in with how to switch Message
// Content on in the Developer Portal.
//
// Inbound: one Gateway connection per bot token, shared by every channel
// of that token (an SDK Consumer). discordgo keeps the session id and the
// sequence number; when the connection drops (or Discord asks with
// RECONNECT) the connector reconnects with backoff and discordgo RESUMEs,
// so Discord replays what was missed. After every READY or RESUMED, and
// whenever a message could not be published, the connector fetches each
// channel's history after the last message it published (GET
// channels/{id}/messages?after=), so an outage, a refused RESUME
// (INVALID_SESSION) or a connector that was down loses nothing. That id is
// saved in the channel state only after the durable publish, and Publish
// is idempotent by message id (dc-<snowflake>), so nothing is published
// twice. Attachments are downloaded at once (their CDN URLs expire) into
// the SDK's file cache. The bot's own and system messages are skipped.
//
// Outbound: replies go through the SDK's EditStream. A reply's first part
// is a Discord reply (message_reference) to the message it answers; texts
// longer than 2,000 characters are sent in parts, files as attachments
// (multipart). Every text post carries a nonce with enforce_nonce, so a
// post repeated after a crash returns the message Discord already made. A
// streamed reply posts a message on its first delta and edits it (PATCH)
// at most once per EditInterval; its final edits it into the complete
// text. Rate limits: discordgo's per-route buckets (X-RateLimit-*) make a
// call wait before it would be refused; a 429 is waited out up to
// MaxRetryWait, and beyond it the message is rejected retryable. A token
// Discord refuses (401, Gateway close 4004) moves the channel to revoked.
//
// discordgo's endpoints are package variables; the connector never
// changes them. Its HTTP transport sends https://discord.com/api requests
// to Options.APIURL and rewrites GET /gateway's answer to
// Options.GatewayURL; the Gateway dialer uses the same proxy.
//
// Tool discord_message_send sends text, and optionally a file given as an
// upload reference, to the bound channel.
package discord
