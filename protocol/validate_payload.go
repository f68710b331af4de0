package protocol

import (
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// ValidatePayload checks the payload rules of e.Type for a packet travelling
// in direction d: the common packets of section 8, the IM v2 packets
// (chat.message, chat.message.delta, chat.message.ack, chat.activity) and
// IM v1 message.push. A known packet travelling against its catalog
// direction is a violation (a Connector never sends chat.message.delta or
// chat.activity). d == 0 means "direction unknown": direction rules, such as
// the inbound download_url, are skipped. Unknown types get no payload rule
// beyond "a JSON object". An ack carrying an envelope error is a failure
// packet and needs no payload. Paths start with "payload". It is pure and
// safe for concurrent use.
func ValidatePayload(e *Envelope, d Direction) Violations {
	return validatePayload(e, d, nil)
}

// ValidateDecodedPayload is [ValidatePayload] for a receiver that has
// already decoded e's payload into p with [Envelope.DecodePayload]: where
// the rules of e.Type read the payload as p's type (a *ChatMessagePayload
// for chat.message, say), they read p instead of decoding the payload a
// second time. p must hold what DecodePayload put there and is not
// modified; for any other type, or a nil p, the payload is decoded as
// ValidatePayload does. It returns the same violations as ValidatePayload
// and is safe for concurrent use on distinct p.
func ValidateDecodedPayload(e *Envelope, d Direction, p any) Violations {
	return validatePayload(e, d, p)
}

func validatePayload(e *Envelope, d Direction, given any) Violations {
	var vs Violations
	if e == nil {
		vs.add("", "packet is missing")
		return vs
	}
	spec, known := LookupPacket(e.Type)
	if known && d != 0 && spec.Direction&d != d {
		vs.add("type", "%s travels only %s, not %s", e.Type, spec.Direction, d)
	}
	raw, ok := payloadObject(e.Payload)
	if !ok {
		vs.add("payload", payloadNotObject)
		return vs
	}
	if !known {
		return vs
	}
	if spec.Profile == ProfileIMv2 {
		checkForbiddenIdentity(raw, "payload", &vs)
	}
	if spec.IsAck && e.Error != nil && len(jsonbytes.TrimSpace(e.Payload)) == 0 {
		return vs
	}
	v := payloadValidator{e: e, d: d, raw: raw, vs: &vs, given: given}
	switch e.Type {
	case TypeHello:
		v.hello()
	case TypeHelloAck:
		v.helloAck()
	case TypeChannelOpenAck:
		v.channelOpenAck()
	case TypeAuthStart:
		var p AuthStartPayload
		if v.decode(&p) && p.FlowID == "" {
			vs.add("payload.flow_id", "is required")
		}
	case TypeAuthStartAck, TypeAuthStatusAck:
		v.authState()
	case TypeAuthStatus:
		var p AuthStatusPayload
		if v.decode(&p) && p.AuthSessionID == "" {
			vs.add("payload.auth_session_id", "is required")
		}
	case TypeAuthCancel:
		var p AuthCancelPayload
		if v.decode(&p) && p.AuthSessionID == "" {
			vs.add("payload.auth_session_id", "is required")
		}
	case TypeAuthCancelAck:
		v.authCancelAck()
	case TypeAuthLogoutAck:
		var p AuthLogoutAckPayload
		if v.decode(&p) && p.ConnectionDescriptor != nil {
			v.descriptor(p.ConnectionDescriptor)
		}
	case TypeDescriptorGetAck, TypeDescriptorPush:
		var p DescriptorPayload
		if v.decode(&p) {
			if p.ConnectionDescriptor == nil {
				vs.add("payload.connection_descriptor", "is required")
			} else {
				v.descriptor(p.ConnectionDescriptor)
			}
		}
	case TypeToolInvoke:
		v.toolInvoke()
	case TypeToolInvokeAck:
		var p ToolInvokeAckPayload
		if v.decode(&p) && p.ToolID == "" {
			vs.add("payload.tool_id", "is required")
		}
	case TypeToolProgressPush:
		var p ToolProgressPayload
		if v.decode(&p) && p.ToolID == "" {
			vs.add("payload.tool_id", "is required")
		}
	case TypeMessagePush:
		v.messagePush()
	case TypeChatMessage:
		v.chatMessage()
	case TypeChatMessageDelta:
		v.chatDelta()
	case TypeChatMessageAck:
		v.chatAck()
	case TypeChatActivity:
		v.chatActivity()
	}
	return vs
}

// payloadValidator carries the state of one ValidatePayload call.
type payloadValidator struct {
	e   *Envelope
	d   Direction
	raw map[string]json.RawMessage
	vs  *Violations
	// given is the payload the caller decoded already (see
	// ValidateDecodedPayload), nil if none.
	given any
}

// decode decodes the payload into p; a type error is a violation.
func (v *payloadValidator) decode(p any) bool {
	if g := reflect.ValueOf(v.given); g.Kind() == reflect.Pointer && !g.IsNil() && g.Type() == reflect.TypeOf(p) {
		reflect.ValueOf(p).Elem().Set(g.Elem()) // a shallow copy: the rules only read it
	} else if err := v.e.DecodePayload(p); err != nil {
		v.vs.add("payload", "does not decode: %v", err)
		return false
	}
	if f := reflect.ValueOf(p).Elem().FieldByName("Extensions"); f.IsValid() && f.CanInterface() {
		if ext, ok := f.Interface().(Extensions); ok {
			checkCaseVariants(p, ext, "payload", v.vs)
		}
	}
	return true
}

func (v *payloadValidator) descriptor(d *Descriptor) {
	for _, x := range ValidateDescriptor(d) {
		v.vs.add(joinRaw("payload.connection_descriptor", x.Path), "%s", x.Reason)
	}
	if v.e.ConnectorChannelID != "" && d.Connection.ConnectorChannelID != "" && d.Connection.ConnectorChannelID != v.e.ConnectorChannelID {
		v.vs.add("payload.connection_descriptor.connection.connector_channel_id", "must equal the envelope connector_channel_id %q", v.e.ConnectorChannelID)
	}
}

func (v *payloadValidator) hello() {
	var p HelloPayload
	if !v.decode(&p) {
		return
	}
	if p.ConnectorCardID == "" {
		v.vs.add("payload.connector_card_id", "is required")
	}
	if p.ProtocolVersion == "" {
		v.vs.add("payload.protocol_version", "is required")
	} else if _, err := ParseVersion(p.ProtocolVersion); err != nil {
		v.vs.add("payload.protocol_version", "%v", err)
	}
	if len(p.SupportedProfiles) == 0 {
		v.vs.add("payload.supported_profiles", "must be non-empty")
	}
	for i, pr := range p.SupportedProfiles {
		if pr == "" {
			v.vs.add(joinPath("payload.supported_profiles", i), "must be non-empty")
		}
	}
}

func (v *payloadValidator) helloAck() {
	var p HelloAckPayload
	if !v.decode(&p) {
		return
	}
	if p.ConnectorCardID == "" {
		v.vs.add("payload.connector_card_id", "is required")
	}
	if p.ConnectorID == "" {
		v.vs.add("payload.connector_id", "is required")
	}
	if p.ProtocolVersion == "" {
		v.vs.add("payload.protocol_version", "is required")
	} else if _, err := ParseVersion(p.ProtocolVersion); err != nil {
		v.vs.add("payload.protocol_version", "%v", err)
	}
}

func (v *payloadValidator) channelOpenAck() {
	var p ChannelOpenAckPayload
	if !v.decode(&p) {
		return
	}
	switch {
	case p.ConnectorChannelID == "":
		v.vs.add("payload.connector_channel_id", "is required")
	case p.ConnectorChannelID != v.e.ConnectorChannelID:
		v.vs.add("payload.connector_channel_id", "must equal the envelope connector_channel_id %q", v.e.ConnectorChannelID)
	}
	if p.ConnectionDescriptor == nil {
		v.vs.add("payload.connection_descriptor", "is required")
		return
	}
	v.descriptor(p.ConnectionDescriptor)
}

func authStartStatuses() []AuthStatus {
	return []AuthStatus{AuthPending, AuthScanned, AuthAuthenticated, AuthExpired, AuthQRRefreshRequired, AuthFailed}
}

func authStatuses() []AuthStatus {
	return []AuthStatus{AuthPending, AuthScanned, AuthAuthenticated, AuthUnauthenticated, AuthExpired, AuthQRRefreshRequired, AuthFailed}
}

func cancelStatuses() []CancelStatus {
	return []CancelStatus{CancelCanceled, CancelIgnored, CancelNotFound}
}

// authState checks auth.start.ack and auth.status.ack: the status enum of
// each, and a valid connection_descriptor on "authenticated".
func (v *payloadValidator) authState() {
	var p AuthStatePayload
	if !v.decode(&p) {
		return
	}
	allowed := authStatuses()
	if v.e.Type == TypeAuthStartAck {
		allowed = authStartStatuses()
	}
	if !slices.Contains(allowed, p.Status) {
		v.vs.add("payload.status", "must be one of %v, not %q", allowed, p.Status)
	}
	switch {
	case p.ConnectionDescriptor != nil:
		v.descriptor(p.ConnectionDescriptor)
	case p.Status == AuthAuthenticated:
		v.vs.add("payload.connection_descriptor", "is required when status is authenticated")
	}
}

func (v *payloadValidator) authCancelAck() {
	var p AuthCancelAckPayload
	if !v.decode(&p) {
		return
	}
	if !slices.Contains(cancelStatuses(), p.Status) {
		v.vs.add("payload.status", "must be one of %v, not %q", cancelStatuses(), p.Status)
	}
	if p.AuthStatus != "" && !slices.Contains(authStatuses(), p.AuthStatus) {
		v.vs.add("payload.auth_status", "must be one of %v, not %q", authStatuses(), p.AuthStatus)
	}
	if p.ConnectionDescriptor != nil {
		v.descriptor(p.ConnectionDescriptor)
	}
}

func (v *payloadValidator) toolInvoke() {
	var p ToolInvokePayload
	if !v.decode(&p) {
		return
	}
	if p.ToolID == "" {
		v.vs.add("payload.tool_id", "is required")
	}
	if a, ok := v.raw["arguments"]; !ok || !isJSONObject(a) {
		v.vs.add("payload.arguments", "is required and must be a JSON object")
	}
}

func (v *payloadValidator) messagePush() {
	var p MessagePushPayload
	if !v.decode(&p) {
		return
	}
	req := func(name, val string) {
		if val == "" {
			v.vs.add(joinPath("payload", name), "is required")
		}
	}
	req("provider", p.Provider)
	switch p.Profile {
	case ProfileIMv1:
	case "":
		v.vs.add("payload.profile", "is required and must be %q", ProfileIMv1)
	default:
		v.vs.add("payload.profile", "must be %q, not %q", ProfileIMv1, p.Profile)
	}
	req("event_kind", p.EventKind)
	req("message_id", p.MessageID)
	req("sender_id", p.SenderID)
	req("message_type", p.MessageType)
	if _, ok := v.raw["raw_text"]; !ok {
		v.vs.add("payload.raw_text", "is required (use \"\" when the message has no text)")
	}
	if p.Text == "" && p.Content == "" && p.Message == "" {
		v.vs.add("payload.text", "text, content or message must carry the user-visible content")
	}
	refs := 0
	for _, r := range []string{p.TargetSessionRef, p.SessionRef, p.TargetSessionID} {
		if r != "" {
			refs++
		}
	}
	if refs > 1 {
		v.vs.add("payload", "at most one of target_session_ref, session_ref and target_session_id may appear")
	}
	for i, f := range p.Files {
		if f.FileRef == "" {
			v.vs.add(joinPath("payload.files", i, "file_ref"), "is required")
		}
		for _, u := range []struct{ name, val string }{{"download_url", f.DownloadURL}, {"url", f.URL}} {
			if u.val == "" {
				continue
			}
			if reason := checkDownloadURL(u.val); reason != "" {
				v.vs.add(joinPath("payload.files", i, u.name), "%s", reason)
			}
		}
	}
}

func fileTypes() []FileType { return []FileType{FileImage, FileVideo, FileAudio, FileFile} }

func (v *payloadValidator) chatMessage() {
	var p ChatMessagePayload
	if !v.decode(&p) {
		return
	}
	if p.MessageID == "" {
		v.vs.add("payload.message_id", "is required")
	}
	if p.Text == "" && len(p.Files) == 0 {
		v.vs.add("payload", "text or files must be non-empty")
	}
	var rawFiles []map[string]json.RawMessage
	_ = json.Unmarshal(v.raw["files"], &rawFiles)
	refs := make(map[string]struct{}, len(p.Files))
	for i, f := range p.Files {
		fp := joinPath("payload.files", i)
		if i < len(rawFiles) {
			checkForbiddenIdentity(rawFiles[i], fp, v.vs)
		}
		if !slices.Contains(fileTypes(), f.Type) {
			v.vs.add(joinPath(fp, "type"), "must be one of %v, not %q", fileTypes(), f.Type)
		}
		switch {
		case f.FileRef == "":
			v.vs.add(joinPath(fp, "file_ref"), "is required")
		default:
			if _, dup := refs[f.FileRef]; dup {
				v.vs.add(joinPath(fp, "file_ref"), "duplicate file_ref %q in this message", f.FileRef)
			}
			refs[f.FileRef] = struct{}{}
		}
		switch {
		case f.DownloadURL != "":
			if reason := checkDownloadURL(f.DownloadURL); reason != "" {
				v.vs.add(joinPath(fp, "download_url"), "%s", reason)
			}
		case v.d == ToHost:
			v.vs.add(joinPath(fp, "download_url"), "is required on a Connector to xAgent message")
		}
	}
}

// checkDownloadURL accepts an absolute http(s) URL with a host or a relative
// Connector URI path such as /files/refs/f_1; it returns why not, or "".
func checkDownloadURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "must be an absolute http(s) URL or a relative URI path"
	}
	if u.IsAbs() {
		if sc := strings.ToLower(u.Scheme); (sc != "http" && sc != "https") || u.Host == "" {
			return "an absolute download_url must be http or https with a host"
		}
		return ""
	}
	if u.Host != "" || u.User != nil || u.Path == "" {
		return "must be an absolute http(s) URL or a relative URI path"
	}
	return ""
}

func (v *payloadValidator) chatDelta() {
	var p ChatDeltaPayload
	if !v.decode(&p) {
		return
	}
	if p.MessageID == "" {
		v.vs.add("payload.message_id", "is required")
	}
	if p.Sequence < 1 {
		v.vs.add("payload.sequence", "must be 1 or more")
	}
	if _, ok := v.raw["files"]; ok {
		v.vs.add("payload.files", "a delta never carries files")
	}
}

func ackStatuses() []AckStatus { return []AckStatus{AckAccepted, AckDuplicate, AckRejected} }

func (v *payloadValidator) chatAck() {
	var p ChatAckPayload
	if !v.decode(&p) {
		return
	}
	if p.MessageID == "" {
		v.vs.add("payload.message_id", "is required")
	}
	if !slices.Contains(ackStatuses(), p.Status) {
		v.vs.add("payload.status", "must be one of %v, not %q", ackStatuses(), p.Status)
	}
	if p.Status == AckRejected {
		if p.Code == "" {
			v.vs.add("payload.code", "is required when status is rejected")
		}
		if p.Retryable == nil {
			v.vs.add("payload.retryable", "a boolean is required when status is rejected")
		}
	}
}

func activityStatuses() []ActivityStatus {
	return []ActivityStatus{ActivityThinking, ActivityTool, ActivityIdle}
}

func (v *payloadValidator) chatActivity() {
	var p ChatActivityPayload
	if !v.decode(&p) {
		return
	}
	if !slices.Contains(activityStatuses(), p.Status) {
		v.vs.add("payload.status", "must be one of %v, not %q", activityStatuses(), p.Status)
	}
	_, present := v.raw["tool_name"]
	switch {
	case p.Status == ActivityTool && p.ToolName == "":
		v.vs.add("payload.tool_name", "is required when status is tool")
	case p.Status != ActivityTool && present:
		v.vs.add("payload.tool_name", "is allowed only when status is tool")
	}
	if len(p.ToolName) > MaxActivityToolNameBytes {
		v.vs.add("payload.tool_name", "is %d bytes, more than %d", len(p.ToolName), MaxActivityToolNameBytes)
	}
}

// checkForbiddenIdentity reports the identity fields an IM v2 payload must
// not carry (IM v2 section 3) among the members of one object.
func checkForbiddenIdentity(obj map[string]json.RawMessage, path string, vs *Violations) {
	for _, k := range ForbiddenIMv2PayloadFields() {
		if _, ok := obj[k]; ok {
			vs.add(joinPath(path, k), "an IM v2 payload must not carry %s", k)
		}
	}
}
