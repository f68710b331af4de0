package xagent

import (
	"io"
	"path"

	"github.com/xconn/xconn/conformance"
)

// Capabilities of this suite: what the run must observe or be given for a
// requirement to apply.
const (
	// CapNone: the requirement applies to every xAgent.
	CapNone conformance.Capability = "none"
	// CapAPIKey: the run was given an API key (Options.APIKey), which the
	// xAgent must send.
	CapAPIKey conformance.Capability = "api-key"
	// CapSignedIn: the xAgent signed a channel in, which starts the script.
	CapSignedIn conformance.Capability = "signed-in"
	// CapReplies: the xAgent's agent replied to the script's first message.
	CapReplies conformance.Capability = "replies"
	// CapReconnected: the xAgent reconnected after the script closed its
	// connection.
	CapReconnected conformance.Capability = "reconnected"
	// CapSentForm: the xAgent started the form flow.
	CapSentForm conformance.Capability = "sent-form"
	// CapSentQR: the xAgent started the QR flow and polled it.
	CapSentQR conformance.Capability = "sent-qr"
	// CapSentCancel: the xAgent sent auth.cancel.
	CapSentCancel conformance.Capability = "sent-cancel"
	// CapSentLogout: the xAgent sent auth.logout.
	CapSentLogout conformance.Capability = "sent-logout"
	// CapSentTool: the xAgent sent tool.invoke.
	CapSentTool conformance.Capability = "sent-tool"
	// CapIMv1: the xAgent negotiated xagent.im.v1 (the Card declares both
	// IM Profiles), so the script sent its IM v1 message.push.
	CapIMv1 conformance.Capability = "im-v1"
	// CapOtherOrigin: another origin reaches the scripted server
	// (Options.OtherOrigin, or the loopback alias of the Base URL's host).
	CapOtherOrigin conformance.Capability = "other-origin"
)

func req(id, section string, level conformance.Level, c conformance.Capability, statement string) conformance.Requirement {
	return conformance.Requirement{ID: id, Section: section, Level: level, Capability: c, Statement: statement}
}

// Requirements returns every requirement of the xAgent-side suite in
// report order. It returns a new slice on each call.
func Requirements() []conformance.Requirement {
	const must, should = conformance.Must, conformance.Should
	return []conformance.Requirement{
		req("xagent.admission-order", "Architecture §6.1", must, CapNone, "Before it opens /ws, xAgent fetches /connector-card.json, then /skill.md, then probes /health (earlier probes aside)"),
		req("xagent.health-key", "3", must, CapAPIKey, "Every /health request carries Authorization: Bearer with the system API key"),
		req("xagent.ws-subprotocol", "6", must, CapNone, "Every /ws handshake offers the subprotocol xagent.connector.packet.v1"),
		req("xagent.ws-bearer", "3", must, CapAPIKey, "Every /ws handshake carries Authorization: Bearer with the system API key"),
		req("xagent.text-frames", "7", must, CapNone, "Every frame from xAgent is a text frame holding one packet with schema xagent.connector.packet/v1, a packet_id and a type"),
		req("xagent.hello-first", "6", must, CapNone, "The first packet on every connection is connector.hello, and no user-level packet comes before its ack"),
		req("xagent.hello-fields", "8.1", must, CapNone, "Every connector.hello has a request_id, the Card's connector_card_id, protocol_version 3.0 and a non-empty supported_profiles"),
		req("xagent.reconnect", "6", must, CapSignedIn, "After the Connector closes the connection, xAgent reconnects on its own"),
		req("xagent.reconnect-connector-id", "8.2", must, CapReconnected, "A reconnect's hello carries the connector_id of the last hello.ack"),
		req("xagent.connector-id-replacement", "8.2", must, CapReconnected, "After a hello.ack with a new connector_id, the next hello carries the new one"),
		req("xagent.reopen", "8.3", must, CapReconnected, "After each reconnect xAgent reopens the signed-in channel with channel.open naming its connector_channel_id, before any other packet for it"),
		req("xagent.form-input", "8.7", must, CapSentForm, "auth.start of a form flow is sent on an open channel, names a Card flow and carries every required field"),
		req("xagent.qr-poll-interval", "8.8", should, CapSentQR, "auth.status polls of a QR session come no faster than its poll_interval_millis"),
		req("xagent.qr-refresh", "8.9", should, CapSentQR, "After an auth.status.ack with status qr_refresh_required, the next auth.status asks refresh=true"),
		req("xagent.cancel", "8.11", must, CapSentCancel, "auth.cancel is sent on an open channel for an auth_session_id the Connector issued there, and that session is not polled afterwards"),
		req("xagent.logout", "8.13", must, CapSentLogout, "auth.logout is sent on an open channel"),
		req("xagent.tool-routing", "8.18", must, CapSentTool, "tool.invoke names in its envelope a channel open on that connection and signed in, a tool the Card declares, a request_id and arguments that are a JSON object"),
		req("xagent.ack-every-message", "IM v2 §7", must, CapSignedIn, "Every chat.message from the Connector gets one chat.message.ack with reply_to = its packet_id, its channel, its message_id and a valid status (rejected with code and retryable)"),
		req("xagent.duplicate", "IM v2 §7", must, CapSignedIn, "A chat.message resent with an accepted message_id and the same content gets chat.message.ack duplicate and no second reply"),
		req("xagent.conflict", "IM v2 §9", must, CapSignedIn, "A chat.message reusing an accepted message_id with other text is rejected with a code and retryable=false"),
		req("xagent.reject-not-open", "IM v2 §10", must, CapSignedIn, "A chat.message on a channel xAgent never opened gets chat.message.ack rejected with code channel_not_open and a retryable flag"),
		req("xagent.inbound-file", "IM v2 §5.3", must, CapSignedIn, "xAgent downloads the download_url of an inbound file before it acknowledges the message accepted"),
		req("xagent.download-other-origin", "IM v2 §5.3", must, CapOtherOrigin, "xAgent downloads an inbound file whose download_url is a signed absolute URL on another origin than the Base URL (a CDN or one-time URL, section 3) before it acknowledges the message accepted"),
		req("xagent.imv1-file-url", "IM v1 §9", must, CapIMv1, "xAgent downloads the file of an IM v1 message.push that carries its address as url instead of download_url"),
		req("xagent.deltas", "IM v2 §6", must, CapReplies, "The deltas of one assistant message are numbered from 1 without gaps, carry no files and come before its final"),
		req("xagent.final", "IM v2 §5", must, CapReplies, "Every final chat.message from xAgent has a message_id and text or files, each file with a type and a file_ref and no download_url"),
		req("xagent.files-uploaded", "IM v2 §5.3", must, CapReplies, "Every file_ref in a final was returned by POST /files/uploads for that channel (with the API key, if any) before the final was sent"),
		req("xagent.pending-redelivered", "IM v2 §9", must, CapReconnected, "A final left unacknowledged across a disconnect is sent again after the reconnect with the same message_id and content"),
		req("xagent.retryable-redelivered", "IM v2 §9", must, CapReplies, "A final rejected with retryable=true is sent again with the same message_id and content"),
		req("xagent.no-resend-accepted", "IM v2 §9", must, CapReconnected, "A final acknowledged accepted is never sent again, not after a reconnect either"),
		req("xagent.no-forbidden-fields", "IM v2 §3", must, CapNone, "No IM v2 payload from xAgent carries session_id, user_connector_id, user_id, connector_id or role"),
	}
}

// Select returns the requirements whose ID matches one of only (all when
// empty) and none of skip, with path.Match patterns; a malformed pattern is
// a *conformance.PatternError.
func Select(only, skip []string) ([]conformance.Requirement, error) {
	for _, p := range append(append([]string(nil), only...), skip...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, &conformance.PatternError{Pattern: p, Err: err}
		}
	}
	var out []conformance.Requirement
	for _, r := range Requirements() {
		if len(only) > 0 && !matchAny(only, r.ID) {
			continue
		}
		if !matchAny(skip, r.ID) {
			out = append(out, r)
		}
	}
	return out, nil
}

func matchAny(patterns []string, id string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

// NonObservable returns the MUSTs of the xAgent side that no run of the
// scripted Connector can establish, with the reason.
func NonObservable() []conformance.NonObservableRule {
	return []conformance.NonObservableRule{
		{Section: "Architecture §6.3", Statement: "xAgent persists a user channel only after authenticated with a Descriptor; a canceled first sign-in leaves no record",
			Reason: "xAgent's storage is not on the wire"},
		{Section: "8.18", Statement: "xAgent never selects or overrides a channel from the model's connector_channel_id argument",
			Reason: "needs the model's intent; xagent.tool-routing checks that the envelope names an open, signed-in channel"},
		{Section: "8.17", Statement: "xAgent validates a pushed Descriptor's identity and ignores a mismatch",
			Reason: "its effect is inside xAgent"},
		{Section: "IM v2 §1.1", Statement: "A final comes only from an assistant message of the current execution, never from history",
			Reason: "needs knowledge of the Agent's history"},
		{Section: "IM v2 §9", Statement: "A final rejected with retryable=false is never redelivered",
			Reason: "a wait without an end; the script checks the retryable case"},
		{Section: "IM v2 §5.3", Statement: "Inbound files enter the Agent as blocks of the same user message",
			Reason: "inside xAgent; the script checks the download comes before the ack"},
	}
}

// WriteMarkdown writes reqs as Markdown tables by section, then the
// table of MUSTs not observable: the output of xconn check --xagent
// --list --markdown.
func WriteMarkdown(w io.Writer, reqs []conformance.Requirement) error {
	if err := conformance.WriteRequirementTables(w, reqs); err != nil {
		return err
	}
	return conformance.WriteNonObservable(w, NonObservable())
}
