// Package host is the xAgent side of the xAgent Connector protocol 3.0: what
// an agent platform embeds to talk to any Connector Server.
//
// A [Host] owns:
//
//   - the catalog: [Host.Admit] validates a Base URL, fetches and validates
//     the Card (protocol version inside the admission window), the Skill and
//     /health, and persists one entry per connector_card_id through
//     store.HostStore (the API key is encrypted at rest by the store);
//     refusals are typed [*AdmissionError] values;
//   - health: a periodic /health probe per connector (states ok, degraded,
//     offline, auth_failed, incompatible) that refetches Card and Skill when
//     the version, protocol or build changes;
//   - the data plane: one WebSocket client per connector with
//     connector.hello, request/ack matching by request_id with timeouts,
//     automatic reconnection with capped backoff (stopping after
//     MaxReconnectFailures until [Host.Recover]) and concurrent reopening of
//     the persisted channels;
//   - channels and sign-in: [Host.Connect] opens a temporary channel, runs
//     auth.start / auth.status polling ([Signin]) and persists the user's
//     channel only once authenticated with a valid Descriptor; [Host.Logout],
//     [Host.DeleteChannel], [Host.BindSession];
//   - tools: [Host.Tools] projects the available tools of a user's channels
//     as model functions, [ExportOpenAI] and [ExportAnthropic] convert them
//     (reporting tool ids the providers reject), and [Host.Invoke] resolves
//     the channel (session binding first) and calls the tool. Resolution and
//     inbound routing read a bounded in-memory cache of the users' channels
//     (Options.MaxCachedChannels) that every write of a user channel
//     invalidates; the store stays the source of truth, and the host must be
//     the only writer of its user channels;
//   - the IM v2 virtual message channel: inbound chat.message (deduplicated
//     by the delivery inbox, files downloaded) reaches an [Agent]; its
//     [ReplyStream] sends activity, deltas and finals, the finals pending in
//     the delivery outbox until the connector accepts them. IM v1
//     message.push reaches the Agent too.
//
// Every goroutine belongs to the Host and stops in [Host.Close].
//
// Embedding it takes a store, an Agent and a few calls:
//
//	db, _ := store.Open(ctx, "sqlite:"+path, store.Options{DataDir: dir})
//	h, _ := host.New(host.Options{Store: db, Delivery: db, Agent: myAgent})
//	_ = h.Start(ctx)
//	defer h.Close(ctx)
//	c, err := h.Admit(ctx, "https://connector.example", apiKey)
//	signin, _ := h.Connect(ctx, userID, c.CardID, "", map[string]string{"room": "r1"})
//	uc, _ := signin.Wait(ctx)
//	defs, _ := h.Tools(ctx, userID, sessionID)
//	tools, unsupported := host.ExportOpenAI(defs)
//	res, err := h.Invoke(ctx, userID, sessionID, toolID, args, toolCallID)
package host
