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
//     channel only once authenticated with a valid Descriptor, bound to its
//     dedicated session (the user channel's id, section 6.3); [Host.Logout],
//     [Host.DeleteChannel], [Host.BindSession] (a session of the platform's
//     own);
//   - tools: [Host.Tools] projects the available tools of a user's channels
//     as model functions, with the built-in channel tools
//     [ToolChannelsList] and [ToolMessageSend] (section 10.1), and
//     upload-reference arguments projected as unified file_refs
//     ([FunctionDef.FileArgs]); [ExportOpenAI] and [ExportAnthropic] convert
//     them (reporting tool ids the providers reject). [Host.Invoke] resolves
//     the channel (session binding first, or [WithUserChannel]), uploads the
//     files of upload-reference arguments, calls the tool and downloads the
//     files of its result ([Result.Files], [Result.ModelOutput]). Inside a
//     conversation, [ScopeFunctions] hides each connector tool's
//     connector_channel_id from the model and [InConversation] fills it
//     from the conversation's channel (an explicit one must name a channel
//     the host signed in for the user);
//     Resolution and inbound routing read a bounded in-memory cache of the
//     users' channels (Options.MaxCachedChannels) that every write of a user
//     channel invalidates; the store stays the source of truth, and the host
//     must be the only writer of its user channels;
//   - files: every file the host downloads (of a user message or a tool
//     result) gets a unified file_ref ([File.Ref]), the only reference a
//     model sees; [Host.RegisterFile] adds the platform's own files and
//     [Host.LookupFile] resolves them. A download from the connector's
//     Base URL origin is made as any request to it; one from another
//     origin (a signed CDN URL) reaches public addresses only, checked
//     after DNS resolution and on every redirect, unless
//     Options.AllowPrivateDownloads; Options.DownloadOrigins can restrict
//     the origins. Downloads are bounded in count and size;
//   - the IM v2 virtual message channel: inbound chat.message (deduplicated
//     by the delivery inbox, files downloaded) reaches an [Agent]; its
//     [ReplyStream] sends activity, deltas and finals, the finals pending in
//     the delivery outbox until the connector accepts them. IM v1
//     message.push reaches the Agent too;
//   - secrets: the host never logs API keys, form input or tokens, and
//     reports them to Options.OnSecret, for the embedder's redacting log
//     handler (connector.NewRedactingHandler with a connector.Redactor).
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
//	defs, _ := h.Tools(ctx, userID, msg.SessionID) // Card tools and built-in channel tools
//	tools, unsupported := host.ExportOpenAI(host.ScopeFunctions(defs)) // no connector_channel_id to guess
//	res, err := h.Invoke(ctx, userID, msg.SessionID, toolID, args, toolCallID, host.InConversation(msg.UserChannelID))
//	// give the model res.ModelOutput, and res.Files (images as image input)
package host
