// Package wechat is the WeChat connector (Card im.wechat, provider
// wechat): an agent in WeChat through a personal bot account of the
// iLink bot API, built on the connector SDK.
//
// Sign-in is the QR flow wechat_qr_login: the connector asks iLink for a
// QR code (get_bot_qrcode), the user scans it with WeChat and confirms,
// and auth.status follows get_qrcode_status (wait, scaned,
// scaned_but_redirect to another host, expired with up to MaxQRRefreshes
// new codes, need_verifycode and verify_code_blocked ending with a clear
// message, binded_redirect, confirmed). The confirmed bot token, bot id,
// per-account base URL and owner id become the channel's sealed Binding.
//
// Inbound, one getupdates long poll runs per bot account (an SDK
// Consumer; a bot serves one channel), framed by notifystart and
// notifystop. Text, quotes, images, files, videos and voice (transcript
// plus audio) are published durably; media is downloaded from the CDN
// and decrypted (AES-128-ECB, both key encodings) first. The cursor is
// saved only after every message of a batch is in the outbox, and each
// peer's latest context_token is kept in the channel's durable state.
//
// Outbound, a final assistant message goes to the sender of the latest
// inbound message (else the owner) with that peer's context_token: the
// text first, then each file uploaded through getuploadurl and the CDN,
// one item per sendmessage. Deltas are buffered by the SDK (WeChat cannot
// edit), and chat.activity drives the typing indicator. errcode -14
// moves the channel to expired until the user scans again; ret -2 is
// retried once without the context token, then rejected as retryable.
//
// The facts this rests on, and what is unknown about the API, are listed
// in README.md next to this file. Package wechattest is a fake iLink
// server for tests.
package wechat
