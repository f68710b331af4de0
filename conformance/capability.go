package conformance

import "github.com/xconn/xconn/protocol"

// decidable reports whether capability c can be evaluated yet: Card
// capabilities need the Card fetched, has-skill the Skill.
func (s *session) decidable(c Capability) bool {
	switch c {
	case CapHasSkill:
		return s.skill.fetched
	case CapDeclaresIMv1, CapDeclaresIMv2, CapDeclaresDevice, CapHasFormFlow, CapHasQRFlow, CapHasTools, CapAPIKeyRequired, CapToolSelected, CapSideEffectToolSelected:
		return s.card != nil || s.cardError != ""
	case CapPublishesDescriptorPush:
		return false // decided by the aggregates probe, once every frame was observed
	}
	return true
}

// has reports whether the run has capability c, or why not.
func (s *session) has(c Capability) (bool, string) {
	cardCap := func(ok bool, why string) (bool, string) {
		if s.card == nil {
			return false, "no usable Card"
		}
		if !ok {
			return false, why
		}
		return true, ""
	}
	switch c {
	case CapNone, "":
		return true, ""
	case CapDeclaresIMv2:
		return cardCap(s.card != nil && s.card.DeclaresProfile(protocol.ProfileIMv2), "the Card does not declare xagent.im.v2")
	case CapDeclaresIMv1:
		return cardCap(s.card != nil && s.card.DeclaresProfile(protocol.ProfileIMv1), "the Card does not declare xagent.im.v1")
	case CapDeclaresDevice:
		return cardCap(s.card != nil && s.card.DeclaresProfile(protocol.ProfileDeviceV1), "the Card does not declare xagent.device.v1")
	case CapHasSkill:
		if !s.skill.fetched || s.skill.status != 200 {
			return false, "the Connector serves no Skill"
		}
		return true, ""
	case CapHasFormFlow:
		return cardCap(s.card != nil && s.flowOfType("form") != nil, "the Card declares no form auth flow")
	case CapHasQRFlow:
		return cardCap(s.card != nil && s.flowOfType("qr_login") != nil, "the Card declares no qr_login auth flow")
	case CapHasTools:
		return cardCap(s.card != nil && len(s.card.Tools) > 0, "the Card declares no tools")
	case CapHasPathPrefix:
		if s.base.Path == "" {
			return false, "the Base URL has no path prefix"
		}
		return true, ""
	case CapAPIKeyRequired:
		ok, why := cardCap(s.card != nil && s.card.Security != nil && s.card.Security.APIKeyRequired, "the Card does not set security.api_key_required")
		if ok && s.opts.APIKey == "" {
			return false, "the Card requires an API key but none was given (--api-key)"
		}
		return ok, why
	case CapAuthFlowSelected:
		if s.opts.AuthFlow == "" {
			return false, "no auth flow selected (--auth-flow)"
		}
		if s.card != nil {
			if _, ok := s.card.AuthFlow(s.opts.AuthFlow); !ok {
				return false, "the Card declares no auth flow " + s.opts.AuthFlow
			}
		}
		return cardCap(true, "")
	case CapHasAuthenticatedChannel:
		if s.authDesc == nil {
			return false, "no signed-in channel (select an auth flow with --auth-flow; see auth.authenticated)"
		}
		return true, ""
	case CapUploads:
		if ok, why := s.uploadsSupported(); !ok {
			return false, why
		}
		return true, ""
	case CapPublishesChat:
		if len(s.obs.inbound) > 0 {
			return true, ""
		}
		if s.opts.Inbound != nil && s.authDesc != nil && !s.inbound.hookFailed {
			return true, "" // the probe asks for one through the hook
		}
		if s.opts.Inbound == nil {
			s.awaitInbound()
		}
		if len(s.obs.inbound) == 0 {
			why := "the Connector published no chat.message during the run"
			if s.inbound.why != "" {
				return false, why + ": " + s.inbound.why
			}
			return false, why + " (an inbound message is needed: set Options.Inbound from go test, or have the target send one right after sign-in)"
		}
		return true, ""
	case CapInboundHook:
		if s.opts.Inbound == nil {
			return false, "no Options.Inbound hook to make the target send a message (available from go test)"
		}
		if s.authDesc == nil {
			return false, "no signed-in channel for Options.Inbound (select an auth flow with --auth-flow; see auth.authenticated)"
		}
		return true, ""
	case CapToolSelected:
		if s.opts.Tool == "" {
			return false, "no tool selected (Options.Tool, --tool with --tool-args): a Card does not say which tools have side effects, so the suite invokes none with invented arguments"
		}
		_, ok := s.selectedTool()
		return cardCap(ok, "the Card declares no tool "+s.opts.Tool+" (Options.Tool, --tool)")
	case CapSideEffectToolSelected:
		if ok, why := s.has(CapToolSelected); !ok {
			return false, why
		}
		if len(s.opts.ToolArgs) == 0 {
			return false, "no arguments given with the tool (Options.ToolArgs, --invoke TOOL --args JSON): the idempotency check invokes only an explicitly named side-effecting tool with explicit arguments"
		}
		return true, ""
	case CapPublishesDescriptorPush:
		if len(s.obs.descPushes) == 0 {
			return false, "the Connector sent no connection.descriptor.push during the run"
		}
		return true, ""
	case CapPublishesMessagePush:
		s.awaitInbound()
		if len(s.obs.pushes) == 0 {
			return false, "the Connector published no message.push during the run"
		}
		return true, ""
	case CapPublishesFiles:
		if len(s.obs.files) == 0 {
			return false, "the Connector published no file with a download_url during the run"
		}
		return true, ""
	}
	return false, "unknown capability " + string(c)
}

// flowOfType returns the first Card auth flow of type typ, or nil.
func (s *session) flowOfType(typ string) *protocol.AuthFlow {
	for i := range s.card.AuthFlows {
		if s.card.AuthFlows[i].Type == typ {
			return &s.card.AuthFlows[i]
		}
	}
	return nil
}

// awaitInbound gives a signed-in Connector one timeout, once per run, to
// publish an inbound message before the checks that need one decide.
func (s *session) awaitInbound() {
	if s.waitedInbound || s.primary == nil || s.authDesc == nil || len(s.obs.inbound)+len(s.obs.pushes) > 0 {
		return
	}
	s.waitedInbound = true
	_, _ = s.primary.await(s.ctx, s.opts.timeout(), func(f frame) bool {
		return f.env != nil && (f.env.Type == protocol.TypeChatMessage || f.env.Type == protocol.TypeMessagePush)
	})
}
