// Package telegram is the Telegram connector of xconn (Card id
// im.telegram, provider telegram, Profile xagent.im.v2): an agent in a
// Telegram chat through a bot of the Bot API, on the connector SDK
// (github.com/xconn/xconn/connector).
//
// Sign-in is the form flow telegram_bot_binding of the spec's example:
// bot_token (password, secret) and chat_id (text). It checks the token
// (getMe), that no webhook is set (getWebhookInfo: Telegram hands a bot's
// updates to a webhook or to getUpdates, never both) and that the bot
// reaches the chat (getChat), and fails otherwise with a secret-free
// message saying what to fix. The Descriptor shows the bot's @username
// and a redacted hint of the chat id.
//
// Inbound: one getUpdates long-polling loop per bot token, shared by
// every channel of that token (an SDK Consumer); only messages of a
// channel's own chat, written after its sign-in, are published on it.
// Text, photos, documents, voice, audio and video are downloaded at once
// (getFile, /file/bot<token>/<path>) into the SDK's file cache and
// published with their download_urls. An update is confirmed to Telegram
// (the next offset) only after its message is in the durable outbox and
// the offset is saved in the channel state, so neither a failed push nor
// a restart loses or replays a message.
//
// Outbound: replies go through the SDK's EditStream. A final reply is sent
// with sendMessage in parts of at most 4,096 UTF-16 units (never cutting
// an emoji or a code block, connector.TextLimit), then its files with
// sendPhoto, sendVideo, sendAudio or sendDocument; each part done is
// recorded, so a retried message resumes after its last sent part. A
// streamed reply posts a message on its first delta and edits it at most
// once per EditInterval; its final edits it into the complete text (or
// posts it, if Telegram cannot edit the message any more); when posting or
// editing a delta fails, the stream stops (flood control only pauses it)
// and the final carries the text. The posted message is recorded durably
// once, so a final redelivered after a restart edits it. Delta state is
// bounded: at most MaxStreams messages (default 256), each dropped
// StreamTTL (default 10 min) after its last delta. In a supergroup with
// forum topics, a reply goes to the topic of the message it answers (the
// SDK's reply context and the host's x-in-reply-to). chat.activity
// thinking and tool become the "typing" chat action (at most every 4 s;
// Telegram clears it after ~5 s). The SDK acks accepted only after every
// Bot API call succeeded; flood control (429, whose retry_after is waited
// out up to MaxRetryWait), 5xx and network failures reject retryable,
// other refusals not. A token Telegram refuses (401) moves the channel to
// revoked, with a Descriptor push; on restore such a channel becomes
// expired.
//
// Tool telegram_message_send sends text, and optionally a file given as
// an upload reference, to the bound chat.
//
// The bot token is in every Bot API URL; it never reaches a log, an
// error, an ack, a Descriptor or a tool result: the client rebuilds
// transport errors without the URL, and the SDK redacts the binding's
// token everywhere.
//
// The Bot API client is this package's own, over net/http: the connector
// needs the offset under its control (advanced only after the durable
// publish), a configurable server URL, a proxy (HTTP or SOCKS5, which
// net/http supports natively), file downloads, the error_code,
// description and parameters.retry_after of each refusal, and token-free
// errors.
package telegram
