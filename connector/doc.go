// Package connector is the Connector Server SDK of the xAgent Connector
// protocol 3.0: one [http.Handler] that serves the control plane
// (/connector-card.json, /skill.md, /health), the data plane (/ws), the
// transfer plane (/files/uploads, /files/refs/{file_ref}) and /metrics, so
// that a connector is only its target code: its Card, its Skill, its
// sign-in flows, its tools and its target client.
//
// A connector author creates a [Server] with [New], registers tools with
// [AddTool] (the input schema comes from the Go type and arguments are
// validated before the handler runs), sign-in flows with
// [Server.AddAuthFlow] ([Form] and [QR]), and the IM v2 callbacks
// [Server.OnAssistantMessage], [Server.OnAssistantDelta] and
// [Server.OnActivity]. Inbound target messages are handed to
// [Channel.Publish], which keeps them in a durable outbox until xAgent
// acknowledges them. [Server.Start] builds and validates the final Card;
// [Server.Close] shuts everything down and waits for every goroutine.
//
// The SDK enforces the wire rules: hello first, version admission, profile
// negotiation, channel ownership, per-channel ordering with parallelism
// across channels, the connector_id lease with cascading cleanup,
// idempotent side-effecting tools, IM v2 delivery rules, signed short-lived
// download URLs and redacted logs.
//
// A complete, small connector (see Example for a runnable version):
//
//	srv, err := connector.New(connector.Options{Card: card, Skill: skillMD, Store: db, APIKey: key})
//	if err != nil {
//		return err
//	}
//	connector.AddTool(srv, "room_message_send",
//		func(ctx context.Context, call *connector.Call, in SendInput) (SendResult, error) {
//			return room(call.Channel).Send(ctx, in.Text) // schema from SendInput, args already validated
//		}, connector.ToolOptions{Description: "Post in the room.", SideEffect: true})
//	srv.AddAuthFlow("room_login", connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
//		tok, err := login(ctx, in.Get("room"), in.Secret("access_code"))
//		return connector.Binding{Data: tok, DisplayName: in.Get("room"), Secrets: []string{string(tok)}}, err
//	}))
//	srv.AddAuthFlow("room_qr", connector.QR(connector.QRFlow{
//		Issue: func(ctx context.Context, s *connector.QRSession) (string, error) {
//			return "https://room.example/login?t=" + s.Token, nil // the page calls srv.AuthComplete(ctx, token, binding)
//		},
//	}))
//	srv.OnAssistantMessage(func(ctx context.Context, ch *connector.Channel, m *connector.AssistantMessage) error {
//		return room(ch).Deliver(ctx, m.Text, m.Files) // ack "accepted" only when this returns nil
//	})
//	if err := srv.Start(ctx); err != nil {
//		return err // an invalid Card lists every violation
//	}
//	defer srv.Close(context.Background())
//	// Target events: ch.Publish(ctx, connector.UserMessage{MessageID: id, Text: "hi"})
//	return http.ListenAndServe("127.0.0.1:8080", srv)
//
// Wire errors: routing, identity and ordering failures are error packets
// that carry the request's request_id and reply_to: hello_required,
// invalid_packet, unsupported_packet, connector_channel_id_required,
// connection_not_found (unknown channel), connector_channel_connector_mismatch
// (channel of another connector_id), channel_not_open, connector_channel_not_owned
// (open on another socket), connector_id_mismatch (a second hello with another
// id) and channel_busy (the channel's queue is full). A refused hello
// (unsupported_protocol_version, connector_card_id_mismatch, invalid_packet
// for missing or non-intersecting supported_profiles) is followed by close
// 1008. Business failures travel in the ack's error: unknown_tool,
// connection_not_authenticated, connector_channel_unavailable,
// invalid_arguments, tool_call_conflict, tool_timeout, tool_invoke_failed,
// internal_error (a panic), auth_flow_not_found, invalid_auth_input,
// auth_session_not_found. Packets of a Profile that was not negotiated are
// dropped silently.
//
// Defaults (all configurable in [Options]): frame limit 1 MiB, lease grace
// 1 h, tool timeout 60 s, sign-in session TTL 10 min (QR codes 2 min),
// upload limit 32 MiB, file TTL 1 h, outbox TTL 1 h with 1,000 messages per
// channel, 64 parallel channel workers per socket, 64 queued packets per
// channel.
package connector
