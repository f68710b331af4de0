package conformance

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// Level is the strength of a requirement: MUST failures fail a run, SHOULD
// failures fail it only in strict mode.
type Level string

// Requirement levels.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Capability names what a Connector must declare, or what a run must reach,
// for a requirement to apply. A requirement whose capability is absent is
// skipped with the reason.
type Capability string

// Capabilities.
const (
	// CapNone: the requirement applies to every Connector Server.
	CapNone Capability = "none"
	// CapDeclaresIMv2: the Card lists xagent.im.v2 in supports.profiles.
	CapDeclaresIMv2 Capability = "declares-imv2"
	// CapDeclaresIMv1: the Card lists xagent.im.v1 in supports.profiles.
	CapDeclaresIMv1 Capability = "declares-imv1"
	// CapDeclaresDevice: the Card lists xagent.device.v1 in supports.profiles.
	CapDeclaresDevice Capability = "declares-device"
	// CapHasSkill: GET /skill.md returns a Skill (200).
	CapHasSkill Capability = "has-skill"
	// CapHasFormFlow: the Card declares an auth flow of type form.
	CapHasFormFlow Capability = "has-form-flow"
	// CapHasQRFlow: the Card declares an auth flow of type qr_login.
	CapHasQRFlow Capability = "has-qr-flow"
	// CapHasTools: the Card declares at least one tool.
	CapHasTools Capability = "has-tools"
	// CapHasPathPrefix: the Base URL has a path prefix.
	CapHasPathPrefix Capability = "has-path-prefix"
	// CapAPIKeyRequired: the Card sets security.api_key_required and an API
	// key was given to the run.
	CapAPIKeyRequired Capability = "api-key-required"
	// CapAuthFlowSelected: the run was given an auth flow (--auth-flow) that
	// the Card declares.
	CapAuthFlowSelected Capability = "auth-flow-selected"
	// CapHasAuthenticatedChannel: the run signed a channel in.
	CapHasAuthenticatedChannel Capability = "has-authenticated-channel"
	// CapUploads: the Connector serves POST /files/uploads.
	CapUploads Capability = "uploads"
	// CapPublishesChat: the Connector sent a chat.message during the run, on
	// its own or asked for through Options.Inbound.
	CapPublishesChat Capability = "publishes-chat"
	// CapInboundHook: the run was given an Options.Inbound hook and signed a
	// channel in.
	CapInboundHook Capability = "inbound-hook"
	// CapToolSelected: the run was given a tool the Card declares
	// (Options.Tool, --tool) to invoke on the signed-in channel.
	CapToolSelected Capability = "tool-selected"
	// CapPublishesMessagePush: the Connector sent a message.push during the run.
	CapPublishesMessagePush Capability = "publishes-message-push"
	// CapPublishesFiles: the Connector sent a message with files during the run.
	CapPublishesFiles Capability = "publishes-files"
	// CapPublishesDescriptorPush: the Connector sent a
	// connection.descriptor.push during the run.
	CapPublishesDescriptorPush Capability = "publishes-descriptor-push"
	// CapSideEffectToolSelected: the run was given a Card tool and its
	// arguments (Options.Tool with Options.ToolArgs, --invoke TOOL --args
	// JSON), which the suite may invoke twice with one tool_call_id.
	CapSideEffectToolSelected Capability = "side-effect-tool-selected"
)

// Requirement is one rule of the protocol that the suite checks. Its ID is
// stable across releases; Section points into the spec (the Common Protocol
// unless prefixed with a Profile name). Requirement values are immutable.
type Requirement struct {
	ID         string     `json:"id"`
	Section    string     `json:"section"`
	Level      Level      `json:"level"`
	Capability Capability `json:"capability"`
	Statement  string     `json:"statement"`
}

// NonObservableRule is a MUST of the spec that no wire check can establish,
// with the reason.
type NonObservableRule struct {
	Section   string `json:"section"`
	Statement string `json:"statement"`
	Reason    string `json:"reason"`
}

// Requirements returns every requirement of the suite in registry order:
// control and transfer plane, data plane, then IM v2, IM v1 and Device v1.
// It returns a new slice on each call; it is safe for concurrent use.
func Requirements() []Requirement {
	var out []Requirement
	out = append(out, commonRequirements()...)
	out = append(out, wsRequirements()...)
	out = append(out, profileRequirements()...)
	return out
}

// Lookup returns the requirement with the given ID, or false.
func Lookup(id string) (Requirement, bool) {
	for _, r := range Requirements() {
		if r.ID == id {
			return r, true
		}
	}
	return Requirement{}, false
}

// Select returns the requirements whose ID matches at least one of only (all
// when only is empty) and none of skip. Patterns use [path.Match] syntax
// ("card.*", "imv2.ack-*"); a malformed pattern is an error.
func Select(only, skip []string) ([]Requirement, error) {
	for _, p := range append(append([]string(nil), only...), skip...) {
		if _, err := path.Match(p, ""); err != nil {
			return nil, &PatternError{Pattern: p, Err: err}
		}
	}
	var out []Requirement
	for _, r := range Requirements() {
		if len(only) > 0 && !matchAny(only, r.ID) {
			continue
		}
		if matchAny(skip, r.ID) {
			continue
		}
		out = append(out, r)
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

// PatternError reports a malformed --only/--skip pattern; it is a usage
// error.
type PatternError struct {
	Pattern string
	Err     error
}

func (e *PatternError) Error() string { return "bad pattern " + e.Pattern + ": " + e.Err.Error() }

func (e *PatternError) Unwrap() error { return e.Err }

// sections returns the distinct sections of reqs: Common Protocol sections
// first, then each Profile document in first-seen order, each in numeric
// section order.
func sections(reqs []Requirement) []string {
	seen := map[string]bool{}
	docs := map[string]int{"": 0}
	var out []string
	for _, r := range reqs {
		if !seen[r.Section] {
			seen[r.Section] = true
			out = append(out, r.Section)
			doc, _ := splitSection(r.Section)
			if _, ok := docs[doc]; !ok {
				docs[doc] = len(docs)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		da, na := splitSection(a)
		db, nb := splitSection(b)
		if c := docs[da] - docs[db]; c != 0 {
			return c
		}
		return slices.Compare(na, nb)
	})
	return out
}

// splitSection splits "IM v2 §5.3" into its document ("IM v2"; "" for the
// Common Protocol) and its section numbers ([5 3]).
func splitSection(s string) (string, []int) {
	doc, num, ok := strings.Cut(s, " §")
	if !ok {
		doc, num = "", s
	}
	var out []int
	for _, part := range strings.Split(num, ".") {
		n, _ := strconv.Atoi(part) // a malformed number sorts as 0
		out = append(out, n)
	}
	return doc, out
}
