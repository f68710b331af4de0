// Package wecom is the WeCom (企业微信) connector, im.wecom, in two modes,
// each with its own form sign-in:
//
//   - a self-built application in callback mode (wecom_app_binding:
//     corp_id, agent_id, secret, token, encoding_aes_key): WeCom POSTs the
//     users' messages, encrypted and signed, to the callback URL
//     <public base>/wecom/callback/<corp_id>/<agent_id> that this
//     connector serves on its own listener (callback.go; the crypto is in
//     internal/wxcrypt), and replies go through the server API
//     (message/send, media/upload) with an access token cached and
//     refreshed (api.go). WeCom cannot edit an application message, so an
//     answer is sent once, as its final.
//   - an intelligent robot (智能机器人) over its long connection
//     (wecom_bot_binding: bot_id, secret): a WebSocket to
//     wss://openws.work.weixin.qq.com that this connector opens, messages
//     in aibot_msg_callback frames, answers streamed with aibot_respond_msg
//     of msgtype "stream" (bot.go).
//
// A forged callback (bad signature, replayed timestamp or nonce, wrong
// AES key or receiveid) is refused with HTTP 4xx and nothing is published;
// it is logged once per kind per replay window, not per request. A
// genuine callback is answered 200 only after the durable Publish, so that
// WeCom retries it if the connector fails; retries are deduplicated by
// MsgId.
//
// The facts it is built on, each with the public page behind it, and the
// unknowns it tolerates are in README.md; wecomtest is a fake WeCom written
// from the same facts.
package wecom
