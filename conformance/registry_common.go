package conformance

// req builds a Requirement; the registry files use it to stay readable.
func req(id, section string, level Level, c Capability, statement string) Requirement {
	return Requirement{ID: id, Section: section, Level: level, Capability: c, Statement: statement}
}

// commonRequirements are the rules of the control plane, the transfer plane
// and the system API key (Common Protocol sections 2 to 5).
func commonRequirements() []Requirement {
	return []Requirement{
		req("version.window", "12", Must, CapNone, "The protocol_version of the Card, /health and connector.hello.ack (a missing one is 1.0) lies within xAgent's admission window [3.0, 3.0]"),
		req("card.http", "4.1", Must, CapNone, "GET /connector-card.json answers 200 with a JSON object and needs no API key"),
		req("card.json-schema", "4.1", Must, CapNone, "The Card validates against the official JSON Schema xagent.connector/v1"),
		req("card.schema", "4.1", Must, CapNone, "Card schema is xagent.connector/v1"),
		req("card.protocol-version", "4.1", Must, CapNone, "Card protocol_version is declared explicitly as 3.0"),
		req("card.id", "4.1", Must, CapNone, "Card connector_card_id is non-empty"),
		req("card.name", "4.1", Must, CapNone, "Card connector.name is non-empty"),
		req("card.version", "4.1", Must, CapNone, "Card connector.version is non-empty"),
		req("card.target-types", "4.1", Must, CapNone, "supports.target_types is non-empty and holds only im, email, calendar, ticket or device"),
		req("card.profiles", "4.1", Must, CapNone, "supports.profiles is non-empty"),
		req("card.profile-target-types", "4.1", Must, CapNone, "Every declared standard Profile intersects supports.target_types (IM Profiles allow only im, Device only device)"),
		req("card.user-channel-mode", "4.1", Must, CapNone, "supports.user_channel_mode, when present, is single or multiple"),
		req("card.tool-profile", "4.1", Must, CapHasTools, "Every tools[].profile, when present, appears in supports.profiles"),
		req("card.tool-id", "4.1", Must, CapHasTools, "Every tools[].tool_id is non-empty and unique"),
		req("card.tool-id-charset", "4.1", Must, CapHasTools, "tools[].tool_id has at most 256 ASCII letters, digits, underscores, hyphens and periods"),
		req("card.tool-input-object", "4.1", Must, CapHasTools, "tools[].input_schema is an object schema"),
		req("card.tool-channel-arg", "4.1", Must, CapHasTools, "input_schema.properties.connector_channel_id has type string and input_schema.required contains it"),
		req("card.tool-no-card-id-arg", "4.1", Must, CapHasTools, "No tool input_schema declares a connector_card_id argument"),
		req("card.auth-flows", "4.1", Must, CapNone, "auth_flows[] have a unique id and the required target_type (a known one), type (qr_login or form) and title; only a form flow has fields, at least one, each with a unique name, a label and input_type text or password"),
		req("card.secret-default", "4.1", Must, CapHasFormFlow, "No secret or password field declares a default_value"),
		req("card.no-server-base-url", "4.1", Must, CapNone, "The Card carries no server_base_url"),
		req("card.targets", "4.1", Should, CapNone, "supports.targets[] declare target_type, provider and label"),
		req("card.auth-flow-target-type", "4.1", Must, CapNone, "auth_flows[].target_type appears in supports.target_types (protocol.ValidateCard enforces it, so xconn's host refuses such a Card)"),
		req("card.related-skill-ids", "4.2", Must, CapHasSkill, "tools[].related_skill_ids name the served Skill or one of its suffixed additional Skills"),
		req("skill.http", "4.2", Must, CapNone, "GET /skill.md answers 200 with Markdown, or 204/404, and needs no API key"),
		req("skill.name", "4.2", Must, CapHasSkill, "The Skill header name is connector-<connector_card_id> with periods and underscores as hyphens, in lowercase hyphen-case"),
		req("health.http", "4.3", Must, CapNone, "GET /health answers 2xx with a JSON object when the API key (if any) is sent"),
		req("health.card-id", "4.3", Must, CapNone, "A connector_card_id returned by /health equals the Card's"),
		req("health.protocol-version", "4.3", Must, CapNone, "The protocol_version of /health equals the Card's"),
		req("health.build", "4.3", Must, CapNone, "The build of /health equals the Card's build"),
		req("health.card-version", "4.3", Should, CapNone, "The connector_card_version of /health equals the Card's connector.version"),
		req("apikey.health", "3", Must, CapAPIKeyRequired, "/health refuses a missing or wrong API key with 401 or 403"),
		req("apikey.ws", "3", Must, CapAPIKeyRequired, "/ws refuses the handshake with 401 or 403 for a missing or wrong API key"),
		req("apikey.status-codes", "4.3", Should, CapAPIKeyRequired, "A refused API key, missing or wrong, is answered 401 or 403 (either one: the text prescribes neither for either case)"),
		req("apikey.uploads", "3", Should, CapUploads, "POST /files/uploads refuses a request without the API key with 401 or 403"),
		req("baseurl.prefix", "3", Must, CapHasPathPrefix, "Every fixed endpoint is served under the Base URL path prefix"),
		req("transfer.upload", "5.1", Must, CapUploads, "POST /files/uploads for an open channel answers 2xx with a JSON body carrying a non-empty file_ref"),
		req("transfer.upload-channel", "5.1", Must, CapUploads, "POST /files/uploads without a channel or for an unknown channel is refused with 4xx (file_ref is bound to a channel)"),
		req("transfer.download-unknown", "5.2", Must, CapNone, "GET /files/refs/{file_ref} answers 404 for an unknown file_ref"),
		req("transfer.download", "5.2", Must, CapPublishesFiles, "A published download_url answers 2xx with raw bytes (not JSON) and a Content-Type"),
		req("transfer.download-other-channel", "5.2", Must, CapPublishesFiles, "GET /files/refs/{file_ref} of a published file, without its signed URL token, with the API key and another channel's X-XAgent-Connector-Channel-ID, does not serve the file (403)"),
		req("security.no-secret-leak", "3", Must, CapNone, "No HTTP body or packet from the Connector contains the API key or a secret auth input"),
	}
}
