package conformance

// profileRequirements are the observable MUSTs of IM Profile v2, IM Profile
// v1 and Device Profile v1.
func profileRequirements() []Requirement {
	return []Requirement{
		req("imv2.descriptor", "IM v2 §2", Must, CapDeclaresIMv2, "A Descriptor enabling xagent.im.v2 has target_type im; a signed-in channel of a Card whose only standard Profile is xagent.im.v2 enables it"),
		req("imv2.ack-accepted", "IM v2 §7", Must, CapHasAuthenticatedChannel, "A final chat.message without deltas gets chat.message.ack accepted with reply_to = its packet_id, its channel and its message_id"),
		req("imv2.ack-request-id", "7", Must, CapHasAuthenticatedChannel, "A chat.message that carries a request_id gets its chat.message.ack with that request_id unchanged (IM v2's examples carry none; section 7 says an ack returns it)"),
		req("imv2.ack-duplicate", "IM v2 §7", Must, CapHasAuthenticatedChannel, "A resent chat.message with an accepted message_id gets chat.message.ack duplicate"),
		req("imv2.ack-conflict", "IM v2 §9", Must, CapHasAuthenticatedChannel, "A chat.message reusing an accepted message_id with other text is rejected with a code and retryable=false"),
		req("imv2.ack-invalid-payload", "IM v2 §7", Must, CapHasAuthenticatedChannel, "A chat.message with neither text nor files is rejected (error packet, or ack rejected with retryable=false)"),
		req("imv2.final-with-file", "IM v2 §5.3", Must, CapUploads, "A final chat.message whose files carry a file_ref returned by POST /files/uploads for the channel gets chat.message.ack accepted"),
		req("imv2.delta-final", "IM v2 §5.4", Must, CapHasAuthenticatedChannel, "Deltas followed by a final chat.message: the final gets chat.message.ack accepted and the deltas get no ack"),
		req("imv2.delta-gap", "IM v2 §6", Must, CapHasAuthenticatedChannel, "A delta with a non-contiguous sequence is rejected explicitly with an error packet"),
		req("imv2.channel-not-open", "IM v2 §10", Must, CapDeclaresIMv2, "A chat.message on a channel that is not open is rejected with code channel_not_open"),
		req("imv2.no-internal-fields", "IM v2 §3", Must, CapDeclaresIMv2, "No IM v2 payload from the Connector carries session_id, user_connector_id, user_id, connector_id or role"),
		req("imv2.connector-direction", "IM v2 §4", Must, CapNone, "The Connector never sends chat.message.delta or chat.activity"),
		req("imv2.inbound-valid", "IM v2 §5", Must, CapPublishesChat, "An inbound chat.message has a message_id, text or files, and files with type, a unique file_ref and a download_url"),
		req("imv2.inbound-delivered", "IM v2 §5.4", Must, CapInboundHook, "A message the target sends on the signed-in channel (asked for through Options.Inbound) arrives as a valid chat.message on that channel, and the Connector takes the chat.message.ack accepted without an error"),
		req("imv2.inbound-message-id", "IM v2 §5.1", Must, CapInboundHook, "Two messages the target sends arrive with different message_ids: a message_id is never reused for a different message"),
		req("imv2.redelivery", "IM v2 §9", Must, CapPublishesChat, "An unacknowledged inbound chat.message is delivered again with the same message_id after a reconnect and channel reopen"),
		req("imv2.inbound-acked-not-resent", "IM v2 §1", Must, CapPublishesChat, "An inbound chat.message acknowledged accepted is not delivered again after a reconnect and channel reopen"),
		req("imv1.descriptor", "IM v1 §3", Must, CapDeclaresIMv1, "A Descriptor enabling xagent.im.v1 has target_type im; a signed-in channel of a Card whose only standard Profile is xagent.im.v1 enables it"),
		req("imv1.message-push", "IM v1 §5", Must, CapPublishesMessagePush, "A message.push carries a channel and provider, profile xagent.im.v1, event_kind, message_id, sender_id, message_type, raw_text and text or content"),
		req("device.descriptor", "Device v1 §2", Must, CapDeclaresDevice, "A Descriptor enabling xagent.device.v1 has target_type device; a signed-in channel of a Card whose only standard Profile is xagent.device.v1 enables it"),
	}
}

// NonObservable returns the MUSTs of the spec that the suite cannot check on
// the wire, with the reason. It returns a new slice on each call.
func NonObservable() []NonObservableRule {
	r := func(section, statement, reason string) NonObservableRule {
		return NonObservableRule{Section: section, Statement: statement, Reason: reason}
	}
	return []NonObservableRule{
		r("3", "Target-system tokens never enter an object visible to xAgent", "the suite knows only the secrets it was given (API key, secret form inputs); it checks those"),
		r("3", "The Connector validates Tool permissions in the target system", "needs a target account with denied permissions"),
		r("4.2", "A Skill rename updates directory, Card, runtime and templates together", "a property of releases, not of one run"),
		r("8.2", "connector_id is unregistered after one continuous offline hour and cascades to channels", "needs a one-hour wait"),
		r("8.5", "channel.close keeps target-system authentication state", "observable only through the target system"),
		r("8.19", "A side-effecting Tool supports idempotency or repeated-call detection", "the side effect happens in the target system; with --invoke TOOL --args JSON, tool.idempotency and tool.idempotency-request-id check that a repeat with the same tool_call_id, or without context with the same request_id, is answered without running again"),
		r("IM v2 §5.4", "The Connector posts the final text as the complete content and never posts deltas and final as two messages", "observable only in the target system"),
		r("IM v2 §7", "A duplicate chat.message repeats no side effect", "the duplicate ack is checked; the absence of a second target message is not observable"),
		r("IM v2 §6", "Delta state is bounded and its TTL and capacity are documented", "limits and documentation are not on the wire"),
		r("IM v2 §9", "The completed-message record is bounded and not deleted right after the ack", "the duplicate check sees only the short term"),
		r("IM v2 §8", "Activity is mapped to typing and has a local timeout; activity failures reject no message", "observable only in the target system"),
		r("IM v1 §7", "Pending inbound messages expire, capacity is bounded and eviction is recorded", "needs TTL-long waits and capacity floods"),
		r("IM v1 §7", "Retries and restarts keep the original expiry time", "needs a restart of the Connector"),
		r("Device v1 §3", "The Connector never asks the Agent for device facts", "a property of the Tool design, reviewed by a person"),
		r("Device v1 §4", "A Tool acts only on the device bound to the channel; control Tools validate ranges", "needs a device and knowledge of each Tool's ranges"),
		r("Device v1 §6", "Screenshots and device files never travel in a WebSocket payload", "partially observable: only Tool results seen during the run"),
		r("Device v1 §7", "Arbitrary shell commands are not exposed as Tools; logs hold no device keys", "needs review of Tool semantics and logs"),
	}
}
