package xagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/protocol"
)

// verdict is the outcome of one requirement before it becomes a Result.
type verdict struct {
	status           conformance.Status
	expected, actual string
	packet, reason   string
}

func pass() verdict           { return verdict{status: conformance.Pass} }
func skip(why string) verdict { return verdict{status: conformance.Skip, reason: why} }
func fail(exp, act, pkt string) verdict {
	return verdict{status: conformance.Fail, expected: exp, actual: act, packet: pkt}
}

// Report judges what the run observed so far and returns the report. It
// may be called at any time, also while the script runs; it is safe for
// concurrent use.
func (s *Server) Report() *conformance.Report {
	s.mu.Lock()
	j := &judge{s: s, ev: slices.Clone(s.events), f: s.facts, files: map[string]upload{}}
	for k, v := range s.files {
		j.files[k] = v
	}
	s.mu.Unlock()
	reqs, _ := Select(s.opts.Only, s.opts.Skip) // checked by NewServer
	rep := &conformance.Report{BaseURL: "xAgent under test (scripted Connector " + CardID + ")", Strict: s.opts.Strict,
		ProtocolVersion: protocol.ProtocolVersion, Headline: j.headline()}
	for _, rq := range reqs {
		v := j.decide(rq)
		rep.Results = append(rep.Results, conformance.Result{ID: rq.ID, Section: rq.Section, Level: rq.Level, Statement: rq.Statement,
			Status: v.status, Expected: j.redact(v.expected), Actual: j.redact(v.actual), Packet: cut(j.redact(v.packet)), Reason: j.redact(v.reason)})
	}
	return rep
}

type judge struct {
	s     *Server
	ev    []event
	f     facts
	files map[string]upload
}

func (j *judge) headline() string {
	switch {
	case j.f.phase == 4:
		return "The script ran to its end."
	case j.f.reason != "":
		return fmt.Sprintf("The script stopped in phase %d: %s.", max(j.f.phase, 1), j.f.reason)
	}
	return fmt.Sprintf("The script is in phase %d.", max(j.f.phase, 1))
}

// redact hides the API key, the secret form inputs the xAgent sent and
// the inbound files' signatures.
func (j *judge) redact(s string) string {
	secrets := []string{j.s.opts.APIKey}
	for _, e := range j.in() {
		var p protocol.AuthStartPayload
		if e.env.Type == protocol.TypeAuthStart && e.env.DecodePayload(&p) == nil {
			secrets = append(secrets, p.Input["code"]) // the Card's one secret field
		}
	}
	for _, k := range secrets {
		if len(k) >= 3 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	j.s.mu.Lock()
	for _, sig := range j.s.sigs {
		s = strings.ReplaceAll(s, sig, "[redacted]")
	}
	j.s.mu.Unlock()
	return s
}

func cut(s string) string {
	if len(s) <= 1024 {
		return s
	}
	n := 1024
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// has reports whether capability c holds, or why not.
func (j *judge) has(c conformance.Capability) (bool, string) {
	switch c {
	case CapNone:
		return true, ""
	case CapAPIKey:
		return j.s.opts.APIKey != "", "no API key was given to the run (--api-key)"
	case CapSignedIn:
		return j.f.channel != "", "the xAgent signed no channel in: " + j.f.reason
	case CapReplies:
		return j.f.f1 != "", "the xAgent did not reply to M1 (the script needs an agent that replies to every message, as xconn host's echo agent does)"
	case CapReconnected:
		return len(j.f.conns) >= 2, "the xAgent did not reconnect with the channel reopened"
	case CapSentForm:
		return j.sent(protocol.TypeAuthStart, FormFlow), "the xAgent never started flow " + FormFlow
	case CapSentQR:
		return j.sent(protocol.TypeAuthStatus, ""), "the xAgent never polled a QR session of flow " + QRFlow
	case CapSentCancel:
		return j.sent(protocol.TypeAuthCancel, ""), "the xAgent sent no auth.cancel (cancel a sign-in during the run to check it)"
	case CapSentLogout:
		return j.sent(protocol.TypeAuthLogout, ""), "the xAgent sent no auth.logout (sign a channel out during the run to check it)"
	case CapIMv1:
		if j.f.p1.MessageID != "" {
			return true, ""
		}
		if j.f.noP1 != "" {
			return false, j.f.noP1
		}
		return false, "the script did not reach P1: " + j.f.reason
	case CapOtherOrigin:
		if j.f.m4.MessageID != "" {
			return true, ""
		}
		if j.f.noM4 != "" {
			return false, j.f.noM4
		}
		return false, "the script did not reach M4: " + j.f.reason
	case CapSentTool:
		return j.sent(protocol.TypeToolInvoke, ""), "the xAgent sent no tool.invoke (invoke " + ToolID + " during the run to check it)"
	}
	return false, "unknown capability " + string(c)
}

// sent reports whether the xAgent sent a packet of type typ (with flow_id
// flow when given).
func (j *judge) sent(typ, flow string) bool {
	for _, e := range j.in() {
		if e.env.Type != typ {
			continue
		}
		if flow == "" {
			return true
		}
		var p protocol.AuthStartPayload
		if e.env.DecodePayload(&p) == nil && p.FlowID == flow {
			return true
		}
	}
	return false
}

// in returns the packets from the xAgent, in order.
func (j *judge) in() []event {
	var out []event
	for _, e := range j.ev {
		if e.kind == "packet" && !e.out {
			out = append(out, e)
		}
	}
	return out
}

func (j *judge) decide(rq conformance.Requirement) verdict {
	if ok, why := j.has(rq.Capability); !ok {
		return skip(why)
	}
	check := j.checks()[rq.ID]
	if check == nil {
		return skip("no check implements this requirement")
	}
	return check()
}

// checks returns the judge of each requirement by ID.
func (j *judge) checks() map[string]func() verdict {
	return map[string]func() verdict{
		"xagent.admission-order":          j.admissionOrder,
		"xagent.health-key":               func() verdict { return j.keyOn("/health", "http") },
		"xagent.ws-subprotocol":           j.subprotocol,
		"xagent.ws-bearer":                func() verdict { return j.keyOn("", "handshake") },
		"xagent.text-frames":              j.textFrames,
		"xagent.hello-first":              j.helloFirst,
		"xagent.hello-fields":             j.helloFields,
		"xagent.reconnect":                j.reconnect,
		"xagent.reconnect-connector-id":   func() verdict { return j.helloID(1) },
		"xagent.connector-id-replacement": func() verdict { return j.helloID(2) },
		"xagent.reopen":                   j.reopen,
		"xagent.form-input":               j.formInput,
		"xagent.qr-poll-interval":         j.qrPoll,
		"xagent.qr-refresh":               j.qrRefresh,
		"xagent.cancel":                   j.cancel,
		"xagent.logout":                   j.logout,
		"xagent.tool-routing":             j.toolRouting,
		"xagent.ack-every-message":        j.ackEvery,
		"xagent.duplicate":                j.duplicate,
		"xagent.conflict":                 j.conflict,
		"xagent.inbound-file":             j.inboundFile,
		"xagent.download-other-origin":    j.otherOriginFile,
		"xagent.imv1-file-url":            j.v1FileURL,
		"xagent.reject-not-open":          j.rejectNotOpen,
		"xagent.deltas":                   j.deltas,
		"xagent.final":                    j.finals,
		"xagent.files-uploaded":           j.filesUploaded,
		"xagent.pending-redelivered":      func() verdict { return j.redelivered(j.f.f1, "the held final") },
		"xagent.retryable-redelivered":    func() verdict { return j.redelivered(j.f.f2, "the final rejected as retryable") },
		"xagent.no-resend-accepted":       j.noResend,
		"xagent.no-forbidden-fields":      j.forbidden,
	}
}

func (j *judge) admissionOrder() verdict {
	// Before the first /ws, the requests must contain the Card, then the
	// Skill, then /health, in that order (earlier probes, such as a
	// client's own preflight of the key, do not count against it).
	want := []string{protocol.PathCard, protocol.PathSkill, protocol.PathHealth}
	k := 0
	var seq []string
	for _, e := range j.ev {
		if e.kind == "handshake" {
			if k == len(want) {
				return pass()
			}
			return fail("GET /connector-card.json, then /skill.md, then /health, before /ws", "requests in the order "+strings.Join(append(seq, "GET /ws"), ", "), "")
		}
		if e.kind != "http" {
			continue
		}
		if len(seq) < 8 {
			seq = append(seq, e.method+" "+e.path)
		}
		if k < len(want) && e.method == "GET" && e.path == want[k] {
			k++
		}
	}
	return skip("the xAgent never opened /ws")
}

// keyOn checks every HTTP request to path (every handshake when kind is
// "handshake") carried the API key.
func (j *judge) keyOn(path, kind string) verdict {
	n := 0
	for _, e := range j.ev {
		if e.kind != kind || (path != "" && e.path != path) {
			continue
		}
		n++
		if !e.keyOK {
			what := "no Authorization header"
			if e.hasKey {
				what = "another key"
			}
			return fail("Authorization: Bearer <api_key>", fmt.Sprintf("%s %s with %s", e.method, e.path, what), "")
		}
	}
	if n == 0 {
		return skip("no such request was made")
	}
	return pass()
}

func (j *judge) subprotocol() verdict {
	n := 0
	for _, e := range j.ev {
		if e.kind == "handshake" {
			n++
			if !e.subprotocol {
				return fail("Sec-WebSocket-Protocol offering "+protocol.Subprotocol, fmt.Sprintf("handshake of connection %d without it", e.conn), "")
			}
		}
	}
	if n == 0 {
		return skip("the xAgent never opened /ws")
	}
	return pass()
}

func (j *judge) textFrames() verdict {
	for _, e := range j.ev {
		switch {
		case e.kind == "frame":
			return fail("text frames holding one packet", "a frame that is not a JSON packet", string(e.raw))
		case e.kind == "packet" && !e.out && (e.env.Schema != protocol.PacketSchema || e.env.PacketID == "" || e.env.Type == ""):
			return fail("schema, packet_id and type on every packet", "a packet without them", string(e.raw))
		}
	}
	return pass()
}

func (j *judge) helloFirst() verdict {
	acked := map[int]bool{}
	seen := map[int]bool{}
	for _, e := range j.ev {
		if e.kind != "packet" {
			continue
		}
		if e.out {
			if e.env.Type == protocol.TypeHelloAck {
				acked[e.conn] = true
			}
			continue
		}
		first := !seen[e.conn]
		seen[e.conn] = true
		if first && e.env.Type != protocol.TypeHello {
			return fail("connector.hello first", fmt.Sprintf("%s first on connection %d", e.env.Type, e.conn), string(e.raw))
		}
		if e.env.Type != protocol.TypeHello && e.env.Type != protocol.TypePing && !acked[e.conn] {
			return fail("no user-level packet before connector.hello.ack", e.env.Type+" before the ack", string(e.raw))
		}
	}
	return pass()
}

func (j *judge) hellos() []event {
	var out []event
	for _, e := range j.in() {
		if e.env.Type == protocol.TypeHello {
			out = append(out, e)
		}
	}
	return out
}

func (j *judge) helloFields() verdict {
	hs := j.hellos()
	if len(hs) == 0 {
		return skip("the xAgent sent no connector.hello")
	}
	for _, e := range hs {
		var p protocol.HelloPayload
		var bad []string
		if e.env.DecodePayload(&p) != nil {
			bad = append(bad, "payload does not decode")
		}
		if e.env.RequestID == "" {
			bad = append(bad, "no request_id")
		}
		if p.ConnectorCardID != CardID {
			bad = append(bad, fmt.Sprintf("connector_card_id %q", p.ConnectorCardID))
		}
		if p.ProtocolVersion != protocol.ProtocolVersion {
			bad = append(bad, fmt.Sprintf("protocol_version %q", p.ProtocolVersion))
		}
		if len(p.SupportedProfiles) == 0 {
			bad = append(bad, "no supported_profiles")
		}
		if len(bad) > 0 {
			return fail("request_id, connector_card_id "+CardID+", protocol_version 3.0, supported_profiles", strings.Join(bad, ", "), string(e.raw))
		}
	}
	return pass()
}

func (j *judge) reconnect() verdict {
	if len(j.f.conns) >= 2 {
		return pass()
	}
	if j.f.phase < 1 || j.f.f1 == "" {
		return skip("the script did not reach its first disconnect: " + j.f.reason)
	}
	return fail("a new /ws connection with hello after the Connector closed the old one", "none within the timeout", "")
}

// helloID checks the hello of phase i (1: the first reconnect, 2: the
// second) carries the connector_id of the previous connection's ack.
func (j *judge) helloID(i int) verdict {
	if len(j.f.conns) <= i {
		return skip(fmt.Sprintf("the script did not reach reconnect %d: %s", i, j.f.reason))
	}
	want := j.ackedID(j.f.conns[i-1])
	for _, e := range j.hellos() {
		if e.conn != j.f.conns[i] {
			continue
		}
		var p protocol.HelloPayload
		_ = e.env.DecodePayload(&p)
		if p.ConnectorID != want {
			return fail("connector_id "+want, fmt.Sprintf("connector_id %q", p.ConnectorID), string(e.raw))
		}
		return pass()
	}
	return skip("no hello on the reconnect")
}

// ackedID returns the connector_id the Server acked on connection n.
func (j *judge) ackedID(n int) string {
	for _, e := range j.ev {
		if e.out && e.conn == n && e.env != nil && e.env.Type == protocol.TypeHelloAck {
			var a protocol.HelloAckPayload
			_ = e.env.DecodePayload(&a)
			return a.ConnectorID
		}
	}
	return ""
}

func (j *judge) reopen() verdict {
	for _, n := range j.f.conns[1:] {
		opened := false
		for _, e := range j.in() {
			if e.conn != n {
				continue
			}
			if e.env.Type == protocol.TypeChannelOpen && e.env.ConnectorChannelID == j.f.channel {
				opened = true
				break
			}
			if e.env.ConnectorChannelID == j.f.channel {
				return fail("channel.open "+j.f.channel+" first", e.env.Type+" before it", string(e.raw))
			}
		}
		if !opened {
			return fail("channel.open naming "+j.f.channel, fmt.Sprintf("connection %d never reopened it", n), "")
		}
	}
	return pass()
}

// opened reports whether channel ch was open on connection n when the
// packet at index i arrived.
func (j *judge) opened(n int, ch string, i int) bool {
	open := false
	for _, e := range j.ev[:i] {
		if e.conn != n || e.env == nil {
			continue
		}
		if e.out && e.env.Type == protocol.TypeChannelOpenAck && e.env.ConnectorChannelID == ch {
			open = true
		}
		if !e.out && e.env.Type == protocol.TypeChannelClose && e.env.ConnectorChannelID == ch {
			open = false
		}
	}
	return open
}

func (j *judge) formInput() verdict {
	for i, e := range j.ev {
		if e.out || e.env == nil || e.env.Type != protocol.TypeAuthStart {
			continue
		}
		var p protocol.AuthStartPayload
		_ = e.env.DecodePayload(&p)
		if _, ok := j.s.card.AuthFlow(p.FlowID); !ok {
			return fail("a Card flow", "flow_id "+p.FlowID, string(e.raw))
		}
		if !j.opened(e.conn, e.env.ConnectorChannelID, i) {
			return fail("auth.start on an open channel", "channel "+e.env.ConnectorChannelID+" not open", string(e.raw))
		}
		if p.FlowID == FormFlow && p.Input["code"] == "" {
			return fail("input with the required field code", "no code", string(e.raw))
		}
	}
	return pass()
}

// statusPolls returns the auth.status packets per session, in order.
func (j *judge) statusPolls() map[string][]event {
	out := map[string][]event{}
	for _, e := range j.in() {
		if e.env.Type == protocol.TypeAuthStatus {
			var p protocol.AuthStatusPayload
			_ = e.env.DecodePayload(&p)
			out[p.AuthSessionID] = append(out[p.AuthSessionID], e)
		}
	}
	return out
}

func (j *judge) qrPoll() verdict {
	// Measured from the answer to one poll to the next poll: the
	// interval is a pause between polls, and an answer's own delay does
	// not count against the xAgent.
	floor := QRPollInterval * 9 / 10
	for id, polls := range j.statusPolls() {
		for k := 1; k < len(polls); k++ {
			answered, ok := j.answerTo(polls[k-1])
			if !ok {
				continue
			}
			if d := polls[k].at.Sub(answered); d < floor {
				return fail(fmt.Sprintf("a pause of %s after each answer", QRPollInterval), fmt.Sprintf("session %s polled again %s after the answer", id, d.Round(time.Millisecond)), string(polls[k].raw))
			}
		}
	}
	return pass()
}

// answerTo returns when the Server answered the packet of e.
func (j *judge) answerTo(e event) (time.Time, bool) {
	for _, a := range j.ev {
		if a.out && a.env != nil && a.env.ReplyTo == e.env.PacketID && a.conn == e.conn {
			return a.at, true
		}
	}
	return time.Time{}, false
}

func (j *judge) qrRefresh() verdict {
	asked := false
	for i, e := range j.ev {
		if !e.out || e.env == nil || e.env.Type != protocol.TypeAuthStatusAck || e.env.Error != nil {
			continue
		}
		var st protocol.AuthStatePayload
		if e.env.DecodePayload(&st) != nil || st.Status != protocol.AuthQRRefreshRequired {
			continue
		}
		asked = true
		for _, n := range j.ev[i+1:] {
			if n.out || n.env == nil || n.env.Type != protocol.TypeAuthStatus {
				continue
			}
			var p protocol.AuthStatusPayload
			_ = n.env.DecodePayload(&p)
			if p.AuthSessionID != st.AuthSessionID {
				continue
			}
			if !p.Refresh {
				return fail("refresh=true after qr_refresh_required", "refresh=false", string(n.raw))
			}
			break
		}
	}
	if !asked {
		return skip("no QR session reached qr_refresh_required")
	}
	return pass()
}

func (j *judge) cancel() verdict {
	polls := j.statusPolls()
	for i, e := range j.ev {
		if e.out || e.env == nil || e.env.Type != protocol.TypeAuthCancel {
			continue
		}
		var p protocol.AuthCancelPayload
		_ = e.env.DecodePayload(&p)
		if !j.opened(e.conn, e.env.ConnectorChannelID, i) {
			return fail("auth.cancel on an open channel", "channel "+e.env.ConnectorChannelID+" not open", string(e.raw))
		}
		j.s.mu.Lock()
		a := j.s.auths[p.AuthSessionID]
		j.s.mu.Unlock()
		if a == nil || a.channel != e.env.ConnectorChannelID {
			return fail("an auth_session_id issued on that channel", fmt.Sprintf("auth_session_id %q", p.AuthSessionID), string(e.raw))
		}
		for _, poll := range polls[p.AuthSessionID] {
			if poll.at.After(e.at) {
				return fail("no auth.status for a canceled session", "polled after auth.cancel", string(poll.raw))
			}
		}
	}
	return pass()
}

func (j *judge) logout() verdict {
	for i, e := range j.ev {
		if !e.out && e.env != nil && e.env.Type == protocol.TypeAuthLogout && !j.opened(e.conn, e.env.ConnectorChannelID, i) {
			return fail("auth.logout on an open channel", "channel "+e.env.ConnectorChannelID+" not open", string(e.raw))
		}
	}
	return pass()
}

func (j *judge) toolRouting() verdict {
	for i, e := range j.ev {
		if e.out || e.env == nil || e.env.Type != protocol.TypeToolInvoke {
			continue
		}
		var p protocol.ToolInvokePayload
		_ = e.env.DecodePayload(&p)
		var args map[string]json.RawMessage
		switch {
		case e.env.RequestID == "":
			return fail("a request_id", "none", string(e.raw))
		case !j.opened(e.conn, e.env.ConnectorChannelID, i):
			return fail("the envelope names a channel open on the connection", "channel "+e.env.ConnectorChannelID+" not open", string(e.raw))
		case p.ToolID != ToolID:
			return fail("a Card tool", "tool_id "+p.ToolID, string(e.raw))
		case json.Unmarshal(p.Arguments, &args) != nil || args == nil:
			return fail("arguments that are a JSON object", string(p.Arguments), string(e.raw))
		}
		// The answer says whether the channel was signed in.
		for _, a := range j.ev[i:] {
			if a.out && a.env != nil && a.env.ReplyTo == e.env.PacketID && a.env.Error != nil {
				return fail("a signed-in channel", "tool.invoke.ack error "+a.env.Error.Code, string(e.raw))
			}
		}
	}
	return pass()
}

// scripted returns the chat.message packets the Server sent.
func (j *judge) scripted() []event {
	var out []event
	for _, e := range j.ev {
		if e.out && e.env != nil && e.env.Type == protocol.TypeChatMessage {
			out = append(out, e)
		}
	}
	return out
}

// chatAcks returns the chat.message.acks from xAgent.
func (j *judge) chatAcks() []event {
	var out []event
	for _, e := range j.in() {
		if e.env.Type == protocol.TypeChatMessageAck {
			out = append(out, e)
		}
	}
	return out
}

// ackOf decodes the chat.message.ack of e (zero for no packet).
func ackOf(e event) protocol.ChatAckPayload {
	var a protocol.ChatAckPayload
	if e.env != nil {
		_ = e.env.DecodePayload(&a)
	}
	return a
}

// ackAfter returns the first ack for message id after index i on conn.
func (j *judge) ackAfter(i, conn int, id string) (event, bool) {
	for _, e := range j.ev[i:] {
		if !e.out && e.conn == conn && e.env != nil && e.env.Type == protocol.TypeChatMessageAck && ackOf(e).MessageID == id {
			return e, true
		}
	}
	return event{}, false
}

func (j *judge) ackEvery() verdict {
	for i, m := range j.ev {
		if !m.out || m.env == nil || m.env.Type != protocol.TypeChatMessage {
			continue
		}
		p := payloadOf(m)
		a, ok := j.ackAfter(i, m.conn, p.MessageID)
		if !ok {
			if j.closedAfter(i, m.conn) {
				continue // the script ended that connection first
			}
			return fail("a chat.message.ack for message "+p.MessageID, "none", string(m.raw))
		}
		ack := ackOf(a)
		switch {
		case a.env.ReplyTo != m.env.PacketID:
			return fail("reply_to "+m.env.PacketID, fmt.Sprintf("reply_to %q", a.env.ReplyTo), string(a.raw))
		case a.env.ConnectorChannelID != m.env.ConnectorChannelID:
			return fail("connector_channel_id "+m.env.ConnectorChannelID, a.env.ConnectorChannelID, string(a.raw))
		case !slices.Contains([]string{protocol.AckAccepted, protocol.AckDuplicate, protocol.AckRejected}, ack.Status):
			return fail("status accepted, duplicate or rejected", ack.Status, string(a.raw))
		case ack.Status == protocol.AckRejected && (ack.Code == "" || ack.Retryable == nil):
			return fail("a rejection with code and retryable", "without them", string(a.raw))
		}
	}
	return pass()
}

// closedAfter reports whether connection n closed after index i.
func (j *judge) closedAfter(i, n int) bool {
	for _, e := range j.ev[i:] {
		if e.kind == "closed" && e.conn == n {
			return true
		}
	}
	return false
}

// scriptedByPacket returns the index of the Server's packet with id.
func (j *judge) scriptedByPacket(id string) (int, bool) {
	for i, e := range j.ev {
		if e.out && e.env != nil && e.env.PacketID == id {
			return i, true
		}
	}
	return 0, false
}

func (j *judge) duplicate() verdict {
	i, ok := j.scriptedByPacket(j.f.dup)
	if j.f.dup == "" || !ok {
		return skip("the script did not reach the duplicate: " + j.f.reason)
	}
	d := j.ev[i]
	a, ok := j.ackAfter(i, d.conn, j.f.m1.MessageID)
	if !ok {
		return fail("chat.message.ack duplicate", "no ack", string(d.raw))
	}
	if st := ackOf(a).Status; st != protocol.AckDuplicate {
		return fail("chat.message.ack duplicate", "status "+st, string(a.raw))
	}
	// No reply may follow before the script's next message.
	end := len(j.ev)
	if k, ok := j.scriptedByPacket(j.f.conflict); ok {
		end = k
	}
	known := map[string]bool{j.f.f1: true}
	for _, e := range j.ev[i:end] {
		if e.out || e.env == nil || (e.env.Type != protocol.TypeChatMessage && e.env.Type != protocol.TypeChatMessageDelta) {
			continue
		}
		var p struct {
			MessageID string `json:"message_id"`
		}
		_ = json.Unmarshal(e.env.Payload, &p)
		if !known[p.MessageID] {
			return fail("no second reply to a duplicate", e.env.Type+" of a new message "+p.MessageID, string(e.raw))
		}
	}
	return pass()
}

func (j *judge) conflict() verdict {
	i, ok := j.scriptedByPacket(j.f.conflict)
	if j.f.conflict == "" || !ok {
		return skip("the script did not reach the conflict: " + j.f.reason)
	}
	a, ok := j.ackAfter(i, j.ev[i].conn, j.f.m1.MessageID)
	if !ok {
		return fail("rejected with a code and retryable=false", "no ack", string(j.ev[i].raw))
	}
	ack := ackOf(a)
	if ack.Status != protocol.AckRejected || ack.Code == "" || ack.Retryable == nil || *ack.Retryable {
		return fail("rejected with a code and retryable=false", fmt.Sprintf("status %q code %q", ack.Status, ack.Code), string(a.raw))
	}
	return pass()
}

func (j *judge) rejectNotOpen() verdict {
	i, ok := j.scriptedByPacket(j.f.notOpen)
	if j.f.notOpen == "" || !ok {
		return skip("the script did not reach the message on a channel never opened: " + j.f.reason)
	}
	m := j.ev[i]
	a, ok := j.ackAfter(i, m.conn, payloadOf(m).MessageID)
	if !ok {
		return fail("chat.message.ack rejected channel_not_open", "no ack", string(m.raw))
	}
	if ack := ackOf(a); ack.Status != protocol.AckRejected || ack.Code != string(protocol.CodeChannelNotOpen) || ack.Retryable == nil {
		return fail("rejected with code channel_not_open and retryable", fmt.Sprintf("status %q code %q", ack.Status, ack.Code), string(a.raw))
	}
	return pass()
}

// otherOriginFile judges M4: its file fetched through the other origin
// before the ack accepted.
func (j *judge) otherOriginFile() verdict {
	if j.f.m4.MessageID == "" {
		return skip("the script did not reach M4: " + j.f.reason)
	}
	want := strings.TrimPrefix(strings.TrimPrefix(j.f.other, "http://"), "https://")
	fetched := -1
	for i, e := range j.ev {
		if e.kind == "http" && e.method == "GET" && e.fileRef == otherRef && strings.EqualFold(e.host, want) && fetched < 0 {
			fetched = i
		}
		if !e.out && e.env != nil && e.env.Type == protocol.TypeChatMessageAck && ackOf(e).MessageID == j.f.m4.MessageID {
			a := ackOf(e)
			switch {
			case a.Status != protocol.AckAccepted:
				return fail("the file fetched from "+j.f.other+" and the message accepted",
					fmt.Sprintf("chat.message.ack %s, code %q: %s", a.Status, a.Code, a.Message), string(e.raw))
			case fetched < 0:
				return fail("GET of the download_url on "+j.f.other+" before the ack accepted", "accepted without downloading the file", string(e.raw))
			}
			return pass()
		}
	}
	if fetched < 0 {
		return fail("GET of the download_url on "+j.f.other, "never fetched, and M4 never acknowledged", "")
	}
	return skip("M4 was not acknowledged")
}

// v1FileURL judges P1: its file fetched from its url.
func (j *judge) v1FileURL() verdict {
	if j.f.p1.MessageID == "" {
		if j.f.noP1 != "" {
			return skip(j.f.noP1)
		}
		return skip("the script did not reach P1: " + j.f.reason)
	}
	for _, e := range j.ev {
		if e.kind == "http" && e.method == "GET" && e.fileRef == v1Ref {
			return pass()
		}
	}
	var errs []string
	for _, e := range j.in() {
		if e.env.Type == protocol.TypeError && e.env.Error != nil {
			errs = append(errs, e.env.Error.Code+": "+e.env.Error.Message)
		}
	}
	actual := "never fetched"
	if len(errs) > 0 {
		actual += "; error packets: " + strings.Join(errs, "; ")
	}
	return fail("GET of the file's url (the push has no download_url)", actual, "")
}

func (j *judge) inboundFile() verdict {
	if j.f.m3.MessageID == "" {
		return skip("the script did not reach M3: " + j.f.reason)
	}
	fetched := -1
	for i, e := range j.ev {
		if e.kind == "http" && e.method == "GET" && e.fileRef == inboundRef && fetched < 0 {
			fetched = i
		}
		if !e.out && e.env != nil && e.env.Type == protocol.TypeChatMessageAck && ackOf(e).MessageID == j.f.m3.MessageID && ackOf(e).Status == protocol.AckAccepted {
			if fetched < 0 {
				return fail("GET of the download_url before the ack accepted", "accepted without downloading the file", string(e.raw))
			}
			return pass()
		}
	}
	if fetched < 0 {
		return fail("GET of the file's download_url", "never fetched", "")
	}
	return skip("M3 was not accepted")
}

// xagentChat returns the chat.message and delta packets from xAgent.
func (j *judge) finalsAndDeltas() (finals, deltas []event) {
	for _, e := range j.in() {
		switch e.env.Type {
		case protocol.TypeChatMessage:
			finals = append(finals, e)
		case protocol.TypeChatMessageDelta:
			deltas = append(deltas, e)
		}
	}
	return finals, deltas
}

func (j *judge) deltas() verdict {
	finals, deltas := j.finalsAndDeltas()
	finalAt := map[string]int{}
	for i, f := range finals {
		if _, ok := finalAt[payloadOf(f).MessageID]; !ok {
			finalAt[payloadOf(f).MessageID] = i
		}
	}
	last := map[string]int64{}
	text := map[string]map[int64]string{}
	for _, d := range deltas {
		var p protocol.ChatDeltaPayload
		var members map[string]json.RawMessage
		_ = json.Unmarshal(d.env.Payload, &members)
		if d.env.DecodePayload(&p) != nil || p.MessageID == "" {
			return fail("a delta with message_id and sequence", "a payload without them", string(d.raw))
		}
		if _, ok := members["files"]; ok {
			return fail("no files in a delta", "files", string(d.raw))
		}
		if text[p.MessageID] == nil {
			text[p.MessageID] = map[int64]string{}
		}
		if prev, ok := text[p.MessageID][p.Sequence]; ok {
			if prev != p.Text {
				return fail("a retransmitted delta with the same text", "other text for sequence "+fmt.Sprint(p.Sequence), string(d.raw))
			}
			continue
		}
		if p.Sequence != last[p.MessageID]+1 {
			return fail(fmt.Sprintf("sequence %d", last[p.MessageID]+1), fmt.Sprintf("sequence %d", p.Sequence), string(d.raw))
		}
		last[p.MessageID] = p.Sequence
		text[p.MessageID][p.Sequence] = p.Text
		if fi, ok := finalAt[p.MessageID]; ok && finals[fi].at.Before(d.at) {
			return fail("deltas before the final", "a delta after the final", string(d.raw))
		}
	}
	if len(deltas) == 0 {
		return skip("the xAgent streamed no deltas")
	}
	return pass()
}

func (j *judge) finals() verdict {
	finals, _ := j.finalsAndDeltas()
	for _, f := range finals {
		p := payloadOf(f)
		if p.MessageID == "" || (p.Text == "" && len(p.Files) == 0) {
			return fail("message_id and text or files", "a final without them", string(f.raw))
		}
		for _, file := range p.Files {
			if file.Type == "" || file.FileRef == "" || file.DownloadURL != "" {
				return fail("files with type and file_ref, no download_url", fmt.Sprintf("file %+v", file), string(f.raw))
			}
		}
	}
	return pass()
}

func (j *judge) filesUploaded() verdict {
	finals, _ := j.finalsAndDeltas()
	n := 0
	for _, f := range finals {
		for _, file := range payloadOf(f).Files {
			n++
			up, ok := j.files[file.FileRef]
			switch {
			case !ok:
				return fail("a file_ref returned by POST /files/uploads", "file_ref "+file.FileRef+" never uploaded", string(f.raw))
			case up.channel != f.env.ConnectorChannelID:
				return fail("uploaded for channel "+f.env.ConnectorChannelID, "uploaded for channel "+up.channel, string(f.raw))
			case !up.at.Before(f.at):
				return fail("uploaded before the final", "after it", string(f.raw))
			}
		}
	}
	for _, e := range j.ev {
		if e.kind == "http" && e.method == "POST" && !e.keyOK {
			return fail("POST /files/uploads with the API key", "without it", "")
		}
	}
	if n == 0 {
		if j.f.f3 == "" {
			return skip("the script did not reach the reply to M3: " + j.f.reason)
		}
		return fail("the reply to M3 carries its file back (as xconn host's echo agent does)", "a final without files", "")
	}
	return pass()
}

// redelivered checks the final with message id came twice with the same
// content.
func (j *judge) redelivered(id, what string) verdict {
	if id == "" {
		return skip("the script did not reach " + what + ": " + j.f.reason)
	}
	finals, _ := j.finalsAndDeltas()
	var seen []protocol.ChatMessagePayload
	for _, f := range finals {
		if p := payloadOf(f); p.MessageID == id {
			seen = append(seen, p)
		}
	}
	if len(seen) < 2 {
		return fail(what+" ("+id+") sent again", fmt.Sprintf("sent %d time(s)", len(seen)), "")
	}
	a, _ := json.Marshal(seen[0])
	b, _ := json.Marshal(seen[1])
	if !bytes.Equal(a, b) {
		return fail("the same content", "other content", string(b))
	}
	return pass()
}

func (j *judge) noResend() verdict {
	accepted := map[string]int{} // message_id -> index of the accepted ack
	for i, e := range j.ev {
		if e.out && e.env != nil && e.env.Type == protocol.TypeChatMessageAck {
			if a := ackOf(e); a.Status == protocol.AckAccepted {
				if _, ok := accepted[a.MessageID]; !ok {
					accepted[a.MessageID] = i
				}
			}
		}
	}
	for i, e := range j.ev {
		if e.out || e.env == nil || e.env.Type != protocol.TypeChatMessage {
			continue
		}
		// A frame of an older connection read late (after the script had
		// closed it, with bytes still buffered) was sent before that
		// connection ended, so before any later connection's ack: the
		// order of records alone would call it a resend.
		if k, ok := accepted[payloadOf(e).MessageID]; ok && k < i && e.conn >= j.ev[k].conn {
			return fail("no final again after accepted", "final "+payloadOf(e).MessageID+" sent again", string(e.raw))
		}
	}
	if j.f.phase < 4 {
		return skip("the script did not watch a full reconnect after the accepted finals: " + j.f.reason)
	}
	return pass()
}

func (j *judge) forbidden() verdict {
	for _, e := range j.in() {
		if !strings.HasPrefix(e.env.Type, "chat.") || len(e.env.Payload) == 0 {
			continue
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(e.env.Payload, &members) != nil {
			continue
		}
		for _, k := range protocol.ForbiddenIMv2PayloadFields() {
			if _, ok := members[k]; ok {
				return fail("no "+k, e.env.Type+" payload has "+k, string(e.raw))
			}
		}
	}
	return pass()
}
