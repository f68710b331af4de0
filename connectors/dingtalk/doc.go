// Package dingtalk is the DingTalk connector, im.dingtalk: one channel per
// DingTalk app robot, signed in with the app's Client ID (AppKey) and
// Client Secret (dingtalk_app_binding, verified with an access token),
// bot messages (1:1, and group messages that @-mention the robot) from
// the app's Stream mode connection (one per Client ID, shared through the
// SDK's Consumer), each acked to DingTalk only after the durable publish;
// replies through the message's session webhook while it is valid, else
// the robot send APIs; streamed replies as an AI card updated in place
// when a card template is configured, else one final message; files both
// ways and the tool dingtalk_message_send.
//
// The facts it is built on (endpoints, frame shapes, limits, errors) are
// in the fact sheet of README.md, each with its public document;
// dingtalktest is a fake DingTalk written from the same facts.
//
// The Stream protocol is spoken here, on github.com/coder/websocket, not
// through github.com/open-dingtalk/dingtalk-stream-sdk-go: that module is
// not served by the Go module proxy this project builds with, and its
// client acks every frame itself (after the handler returns, from a
// goroutine per frame, so out of order), reconnects by itself in a
// goroutine nothing waits for, and keeps its logger process-global. The
// connector must ack a bot message only after the durable publish, in
// order, and own every goroutine (see stream.go).
package dingtalk
