// Package connector is the Connector Server SDK of the xAgent Connector
// protocol 3.0: one [http.Handler] that serves the control plane
// (/connector-card.json, /skill.md, /health), the data plane (/ws), the
// transfer plane (/files/uploads, /files/refs/{file_ref}) and /metrics, so
// that a connector is only its target code: its Card, its Skill, its
// sign-in flows, its tools and its target client.
//
// A connector is declared in code, once. [New] takes an [Identity] (card
// id, name, provider, target type) from which the SDK derives the whole
// Card; the registrations fill in the rest:
//
//   - [AddForm] declares a form sign-in flow from a Go struct (fields,
//     labels, secrets from struct tags) and hands its handler the typed,
//     validated input; [AddQR] declares a QR flow ([WithQRData] keeps
//     its per-session target state). Both return an
//     [Account]: the channel's binding, a Go value of the connector's
//     binding type B that the SDK seals (JSON, encrypted at rest) and
//     restores; [Clients.Binding] (or [BindingOf]) reads it back.
//   - [SetClient] registers the constructor of the per-channel client (the
//     channel's live connection to its target) and returns a [Clients]
//     handle whose types are fixed there: handlers get the client with
//     [Clients.Get], and a wrong type is a compile error. The SDK makes the
//     client on sign-in, before the channel reports authenticated (its
//     error fails the sign-in; a handler that already checked the target
//     hands its client over with [Clients.With] instead), and on Start for
//     every restored channel (which stays offline until the client
//     exists); the constructor's [ClientReason] tells the two apart. The
//     SDK closes the client on logout, replacement, lease expiry and Close.
//   - [AddConsumer] runs one target consumer per credential (a bot
//     token, an app), started with the first channel of that credential
//     and stopped with the last; [Members] publishes to its channels and
//     reports the consumer's health, which the SDK turns into the
//     channels' status (see "Consumers: health and terminal errors").
//   - [AddTool] registers a typed tool whose input schema comes from its
//     input type; arguments are validated before the handler runs; an
//     [Upload] field is an upload reference the SDK resolves to the
//     channel's file.
//   - [Server.OnAssistantMessage], [Server.OnAssistantDelta] and
//     [Server.OnActivity] receive the IM v2 traffic from xAgent.
//   - [Channel.Publish] hands an inbound target message to xAgent through
//     a durable outbox; [Channel.SaveState] keeps small per-channel state
//     across restarts; [Channel.SaveProgress] records what the target
//     already has of an assistant message delivered in several calls, so a
//     redelivery posts only what is missing.
//
// [Server.ListenAndServe] then opens the default SQLite store in
// Options.DataDir, starts, serves with hardened timeouts, stops on SIGINT
// or SIGTERM and closes in order. A Server is also a plain [http.Handler]
// ([Server.Start], serve it yourself, [Server.Close]). A hand-written
// Options.Card with [Server.AddAuthFlow] ([Form], [QR]) and
// [Server.OnBind] remains possible for advanced use.
//
// A complete connector (examples/roomchat is the runnable version):
//
//	srv, err := connector.New(connector.Options{DataDir: dir, APIKey: key, Skill: skillMD,
//		Identity: connector.Identity{CardID: "im.roomchat", Name: "Room Chat", Provider: "roomchat", TargetType: protocol.TargetIM}})
//	if err != nil {
//		return err
//	}
//	connector.AddForm(srv, "room_login", func(ctx context.Context, ch *connector.Channel, in Login) (connector.Account[Binding], error) {
//		return connector.Account[Binding]{Binding: Binding{Room: in.Room, Code: in.AccessCode}, DisplayName: in.Room}, nil
//	}, connector.FlowOptions{Title: "Join a room"})
//	rooms, _ := connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b Binding, _ connector.ClientReason) (*Room, error) {
//		return dialRoom(ctx, b.Room, b.Code) // its error fails the sign-in
//	})
//	connector.AddTool(srv, "room_message_send", func(ctx context.Context, call *connector.Call, in Say) (Said, error) {
//		r, err := rooms.Get(call.Channel) // a *Room: the type SetClient fixed
//		if err != nil {
//			return Said{}, err
//		}
//		return r.Say(ctx, in.Text)
//	}, connector.ToolOptions{Description: "Post in the room.", SideEffect: true})
//	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
//		r, err := rooms.Get(ch)
//		if err != nil {
//			return err
//		}
//		_, err = r.Say(ctx, m.Text) // ack "accepted" only when this returns nil
//		return err
//	})
//	return srv.ListenAndServe(ctx, "127.0.0.1:8080") // registration errors surface here too
//
// # What the SDK fills in
//
// From the Identity and the registrations: schema, protocol_version (3.0),
// build (see [BuildInfo]: -ldflags or the toolchain's VCS data; build_time
// is UTC YYMMDDhhmm such as "2607241200"), supports.target_types and
// targets, supports.profiles (IM v2 for im, Device v1 for device, unless
// Identity.Profiles says otherwise), auth_flows[] with the target_type and
// title the spec requires, ui.login_flow, tools[] with connector_channel_id
// injected into each input_schema and the primary Skill in
// related_skill_ids, security.api_key_required. The Skill gets a front
// matter naming the primary Skill ("connector-" + card id with '.' → '-')
// when it has none, and is checked against it otherwise.
//
// # Struct tags
//
// Tool input types (AddTool) and form types (AddForm) are described by
// struct tags:
//
//   - json:"name" names the property or field; ",omitempty" (or
//     ",omitzero", or a pointer type for tools) makes it optional; "-"
//     skips it. Embedded structs without a tag are flattened (tools).
//   - desc:"..." (tools): the property's description.
//   - enum:"a,b,c" (tools): the allowed values, typed after the field.
//   - A tool field of type [Upload] is an upload reference:
//     {"type":"string","format":"file_ref"} (protocol.FormatUploadRef).
//   - label:"..." (forms): the field's label (default: its name).
//   - secret:"true" (forms and bindings): a sensitive value; a form field
//     becomes a password input marked secret, a binding field's value is
//     added to the redaction set.
//   - input:"text|password" (forms): the input control (default text, or
//     password for a secret field).
//   - placeholder:"...", help:"..." (forms): placeholder and help_text.
//   - default:"..." (forms): default_value (not allowed on secret fields).
//
// Tool inputs map Go types to JSON Schema as string, integer, number,
// boolean, array, object (nested structs, additionalProperties false),
// maps with string keys, time.Time (date-time) and json.RawMessage (any).
// Form fields are strings on the wire (the spec's text and password
// inputs); fields of integer, float and bool type are parsed from that text
// and handed to the handler as numbers and booleans; a value that does not
// parse is an invalid_auth_input naming the field, never quoting the value.
//
// # Idempotent tools
//
// Section 8.19 asks a side-effecting tool for idempotency or repeated-call
// detection; Device v1 section 4 forbids taking a network retry as
// permission to act again. A tool registered with ToolOptions.SideEffect
// (or in [ToolAct] mode) is recorded per channel under its call's
// [Call.IdempotencyKey], and a repeat is answered from the record without
// running the handler (other arguments under the same key are a
// tool_call_conflict). The key is the rule:
//
//   - payload.context.tool_call_id when xAgent sent one;
//   - otherwise the envelope's request_id, per tool: context is optional
//     (section 8.18), while request_id is required on every request,
//     generated by xAgent and returned unchanged (section 7), so a
//     request sent again keeps it; packet_id names one transmission (IM
//     v2 section 3) and is never a key;
//   - with neither, there is nothing that tells a resend from a new call:
//     the tool runs each time.
//
// Records live for Options.ToolCallRetention (default 24 h), at most
// Options.MaxToolCalls (default 10,000).
//
// # Hook contexts and errors
//
// Every handler gets a context that ends with the request it serves: a
// tool's with its timeout (ToolOptions.Timeout, default Options.ToolTimeout)
// or when the socket closes; a sign-in handler and a client constructor
// with the auth.start or auth.status request (ToolTimeout at most) or, on
// restore, ToolTimeout; the IM v2 handlers with ToolTimeout or the socket; a
// Consumer's Run with the consumer's life (cancelled when its last channel
// leaves or Close runs). Do not keep these contexts. An error returned by a
// handler is classified by value: a *protocol.Error keeps its code and
// message, which must be secret-free; [Temporary] marks an error worth a
// retry (a rejected chat message is marked retryable, so xAgent sends it
// again); anything else is reported with
// a generic message, and the detail goes to the redacting log only. A panic
// is recovered as internal_error without its value.
//
// A sign-in whose target cannot be reached fails with [CodeTargetUnreachable]
// (return it as a retryable *protocol.Error; a network error or deadline
// that is not a *protocol.Error is classified the same way): the
// auth.start.ack carries it as an error, as it does invalid_auth_input,
// and the channel keeps its status. A sign-in handler that has just
// checked the credentials (a getMe) returns its client with [Clients.With],
// so the constructor does not check them a second time; the constructor
// runs with [ClientSignIn] when no client was handed over and with
// [ClientRestore] at Start, when it must check the stored binding itself.
// [Channel.SignedInAt] (and the Descriptor's connection.x-signed-in-at)
// tells when the binding was made.
//
// # Consumers: health and terminal errors
//
// A [Consumer]'s health is its channels' connection status, kept by the
// SDK: Run calls [Members.Connected] when it reaches the target (the events
// socket is open, a poll was answered); an error returned by Run marks the
// key's connected channels degraded until the restarted Run reports
// Connected again; [Members.Degraded] says the same from a Run that
// reconnects by itself. A refusal that no retry can cure is a terminal
// error: wrap [ErrRevoked] (a revoked token: Telegram 401, Slack
// invalid_auth or token_revoked, Discord close 4004, a DingTalk or WeCom
// token refusal), wrap [ErrBindingExpired] (a session that timed out), or
// return a [*TerminalError] with the status it means. The SDK marks every
// channel of the key with that status (they keep their bindings; their
// Descriptors are pushed), logs the cause once and parks the consumer: no
// restart loop. Run is called again when a channel signs in anew with the
// key (or, for a status that stays signed in such as error, when the
// connector restarts). [TerminalStatus] classifies an error the same
// way; a client constructor returning a terminal error on restore marks its
// channel likewise.
//
// # Inbound messages
//
// [Channel.Publish] stores a message in the durable outbox and is
// idempotent by UserMessage.MessageID, the target's own message id: a
// MessageID published again is a no-op while the message is pending and,
// once it left the outbox (accepted, expired, evicted), for the dedupe
// window, Options.DedupeWindow (default 24 h), among the connector's last
// Options.DedupeHistory outcomes (default 10,000, all channels together).
// Past either bound the id is forgotten and the message is published anew;
// a target that may redeliver events later than the window needs a larger
// one.
//
// # Devices (xagent.device.v1)
//
// A device connector (Identity.TargetType device) declares each tool's
// [ToolMode] in ToolOptions.Mode: [ToolObserve] calls (status, screenshot)
// leave the channel's queue and run in parallel, also beside a long
// control action; [ToolAct] calls (tap, key press) run one at a time per
// channel in arrival order and are idempotent by [Call.IdempotencyKey],
// every outcome of the handler recorded. [Channel.SetDeviceState] reports what
// the connector sees of the device (available, offline, permission
// denied): the SDK corrects the connection status and every tool's
// availability in one step and pushes the Descriptor when it changed,
// and refuses calls with [CodeDeviceOffline] or
// [CodeDevicePermissionDenied]; a handler reports a slow device with
// [CodeDeviceCommandTimeout]. A restored channel stays offline until its
// ClientFunc has verified the device. [Channel.CacheMedia] puts a
// screenshot or pulled file on the transfer plane with its own TTL, and
// [Channel.DeleteFile] evicts one early; connectors/adb is the example.
//
// # IM v2 rules a connector must know
//
// No payload a connector builds may carry session_id, user_connector_id,
// user_id, connector_id or role; chat.message never carries file bytes,
// base64, local paths, target tokens or CDN signatures (Publish turns
// files into file_refs with signed download URLs). A connector never sends
// chat.message.delta or chat.activity. A message streamed through
// OnAssistantDelta is edited into its final text, never posted twice.
//
// # One channel, one conversation
//
// A connector_channel_id is one user's binding to one target conversation.
// A bot that serves many chats maps each chat to its own channel: the
// binding holds the chat (for example a chat_id) and the credential, the
// Consumer is shared per credential, and Members.Publish with a filter on
// the binding routes each inbound message to the channel of its chat.
//
// Wire errors: routing, identity and ordering failures are error packets
// that carry the request's request_id and reply_to: hello_required,
// invalid_packet, unsupported_packet, connector_channel_id_required,
// connection_not_found (unknown channel), connector_channel_connector_mismatch
// (a channel of another connector_id that is still connected, or any packet
// but channel.open on another instance's channel), channel_not_open,
// connector_channel_not_owned
// (open on another socket), connector_id_mismatch (a second hello with another
// id) and channel_busy (the channel's queue is full). A refused hello
// (unsupported_protocol_version, connector_card_id_mismatch, invalid_packet
// for missing or non-intersecting supported_profiles) is followed by close
// 1008. A hello for a new connector_id while the store's instance table
// (store.Options.MaxInstances) holds only connector_ids within their lease
// grace is refused with capacity_exceeded and close 1013 (try again
// later): an instance is never evicted before its grace ends (section
// 8.2), and a hello naming a connector_id already issued is always
// admitted. Business failures travel in the ack's error: unknown_tool,
// connection_not_authenticated, connector_channel_unavailable,
// invalid_arguments, tool_call_conflict, tool_timeout, tool_invoke_failed,
// internal_error (a panic), auth_flow_not_found, invalid_auth_input,
// auth_session_not_found, target_unreachable (a sign-in whose target
// cannot be reached), and for device connectors device_offline,
// device_command_timeout and device_permission_denied. Packets of a Profile that was not negotiated are
// dropped silently.
//
// Versions and routing: a hello whose protocol_version is 3.0 or newer is
// admitted (the ack carries 3.0); a missing, malformed or older one is
// refused. A channel.open naming a channel of a replaced instance (its
// connector_id in its lease grace, or restored at start) re-adopts it with
// its binding, status and pending messages, as architecture section 5
// requires. [Channel.Publish] and [Channel.PushMessage] refuse a channel
// that is not signed in (connection_not_authenticated, nothing stored). An
// IM v1 message.push counts as delivered only once written to the socket.
//
// Defaults (all configurable in [Options]): frame limit 1 MiB, lease grace
// 1 h, tool timeout 60 s, sign-in session TTL 10 min (QR codes 2 min),
// upload limit 32 MiB, file TTL 1 h, outbox TTL 1 h with 1,000 messages per
// channel, dedupe window 24 h over the last 10,000 messages, 64 parallel
// channel workers per socket, 64 queued packets per channel.
package connector
