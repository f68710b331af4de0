package xagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/xconn/xconn/protocol"
)

// facts are what the script did and learned, for the judges. Guarded by
// Server.mu.
type facts struct {
	channel       string // the signed-in channel the script plays on
	conns         []int  // the connection of each phase
	ids           []string
	m1, m2, m3    protocol.ChatMessagePayload
	dup, conflict string // packet_ids of the duplicate and the conflict
	notOpen       string // packet_id of the message on a channel never opened
	f1, f2, f3    string // message_ids of the replies' finals
	// p1 is the IM v1 push with a url file, m4 the message whose file is
	// on the other origin (other); noP1 and noM4 say why one was not sent.
	p1         protocol.MessagePushPayload
	m4         protocol.ChatMessagePayload
	other      string
	noP1, noM4 string
	phase      int    // the last phase reached, 1 to 3; 4 when done
	reason     string // why the script stopped early
}

// script plays the scenario of the package documentation. It returns when
// the scenario ends, a wait times out or ctx ends.
func (s *Server) script(ctx context.Context) {
	t, quiet := s.opts.timeout(), s.opts.quiet()
	tag := runTag()
	stop := func(why string) {
		s.mu.Lock()
		s.facts.reason = why
		s.mu.Unlock()
		s.printf("script stopped: %s", why)
	}
	s.printf("waiting for an xAgent to sign a channel in (flow %s with any code, or %s)", FormFlow, QRFlow)
	ev, ok := s.await(ctx, 0, s.opts.signInWait(), func(e event) bool { return signedInAck(e) != "" })
	if !ok {
		stop("no channel was signed in")
		return
	}
	ch, n1 := signedInAck(ev), ev.conn
	m1 := protocol.ChatMessagePayload{MessageID: "xc-m1-" + tag, Text: "xagent check: first message"}
	s.mu.Lock()
	s.facts.channel, s.facts.conns, s.facts.phase, s.facts.m1 = ch, []int{n1}, 1, m1
	s.holdFinals = true
	s.mu.Unlock()
	s.printf("channel %s signed in on connection %d: sending M1 and holding the reply's final", ch, n1)

	// Phase 1: M1, its reply's final left pending, then a disconnect.
	mark := s.mark()
	if _, ok := s.push(n1, ch, m1); !ok {
		stop("the connection ended before M1")
		return
	}
	if _, ok := s.await(ctx, mark, t, ackFor(m1.MessageID)); !ok {
		stop("M1 was not acknowledged")
		return
	}
	fev, ok := s.await(ctx, mark, t, finalOn(ch, nil))
	if !ok {
		stop("no reply to M1 (the script needs an agent that replies to every message)")
		return
	}
	f1 := payloadOf(fev).MessageID
	s.mu.Lock()
	s.facts.f1 = f1
	s.replaceID = true
	s.mu.Unlock()
	s.printf("reply %s held; closing connection %d", f1, n1)
	mark = s.mark()
	s.closeConn(n1, "scripted reconnect")
	// Finals are held until connection 1 is closed: its reader may still
	// be handling a frame, and an ack written then (recorded, never
	// delivered) made the redelivery after the reconnect look like a
	// resend of an accepted final.
	s.mu.Lock()
	s.holdFinals = false
	s.mu.Unlock()

	// Phase 2: the reconnect, with a replacement connector_id.
	n2, ok := s.reconnected(ctx, mark, n1, ch, t)
	if !ok {
		stop("no reconnect with the channel reopened")
		return
	}
	s.mu.Lock()
	s.facts.conns, s.facts.phase = append(s.facts.conns, n2), 2
	s.mu.Unlock()
	if _, ok := s.await(ctx, mark, t, finalOn(ch, func(id string) bool { return id == f1 })); !ok {
		stop("the pending final " + f1 + " did not come again")
		return
	}
	s.printf("pending final %s redelivered and accepted; sending M1 again (duplicate), then a conflict", f1)
	mark = s.mark()
	dup, _ := s.push(n2, ch, m1)
	if _, ok := s.await(ctx, mark, t, ackFor(m1.MessageID)); !ok {
		stop("the duplicate was not acknowledged")
		return
	}
	s.sleep(ctx, quiet) // a second reply would come now
	mark = s.mark()
	conflict, _ := s.push(n2, ch, protocol.ChatMessagePayload{MessageID: m1.MessageID, Text: "xagent check: other text"})
	if _, ok := s.await(ctx, mark, t, ackFor(m1.MessageID)); !ok {
		stop("the conflict was not acknowledged")
		return
	}
	// A message on a channel the xAgent never opened: rejected as
	// channel_not_open, with retryable said (IM v2 section 10).
	mark = s.mark()
	notOpen, _ := s.push(n2, notOpenChannel, protocol.ChatMessagePayload{MessageID: "xc-not-open-" + tag, Text: "xagent check: nobody opened this channel"})
	s.await(ctx, mark, t, ackFor("xc-not-open-"+tag)) // judged by xagent.reject-not-open
	s.mu.Lock()
	s.facts.dup, s.facts.conflict, s.facts.notOpen = packetID(dup), packetID(conflict), packetID(notOpen)
	s.mu.Unlock()

	m2 := protocol.ChatMessagePayload{MessageID: "xc-m2-" + tag, Text: "xagent check: second message"}
	s.mu.Lock()
	s.facts.m2, s.rejectNext = m2, true
	s.mu.Unlock()
	s.printf("sending M2; its reply's final is rejected as retryable once")
	mark = s.mark()
	s.push(n2, ch, m2)
	old := func(id string) bool { return id != f1 }
	fev, ok = s.await(ctx, mark, t, finalOn(ch, old))
	if !ok {
		stop("no reply to M2")
		return
	}
	f2 := payloadOf(fev).MessageID
	s.mu.Lock()
	s.facts.f2 = f2
	s.mu.Unlock()
	if _, ok := s.await(ctx, s.indexAfter(fev), t, finalOn(ch, func(id string) bool { return id == f2 })); !ok {
		stop("the final rejected as retryable did not come again")
		return
	}

	m3 := protocol.ChatMessagePayload{MessageID: "xc-m3-" + tag, Text: "xagent check: a file",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: inboundRef, Filename: "check.txt", MimeType: "text/plain",
			DownloadURL: s.sign(inboundRef)}}}
	s.mu.Lock()
	s.facts.m3 = m3
	s.mu.Unlock()
	s.printf("sending M3 with a file")
	mark = s.mark()
	s.push(n2, ch, m3)
	fev, ok = s.await(ctx, mark, t, finalOn(ch, func(id string) bool { return id != f1 && id != f2 }))
	if !ok {
		stop("no reply to M3")
		return
	}
	s.mu.Lock()
	s.facts.f3 = payloadOf(fev).MessageID
	s.mu.Unlock()
	// M2 and M3 are acknowledged before the connection ends (the reply
	// may come before the ack of its message).
	for _, id := range []string{m2.MessageID, m3.MessageID} {
		if _, ok := s.await(ctx, 0, t, ackFor(id)); !ok {
			stop(id + " was not acknowledged")
			return
		}
	}

	// Phase 3: reconnect once more; nothing accepted may come back. The
	// close follows the written ack of the last final at once, as a
	// Connector restarting right after an ack would: the ack came first on
	// the socket, so the xAgent has it.
	f3 := payloadOf(fev).MessageID
	if _, ok := s.await(ctx, s.indexAfter(fev), t, func(e event) bool {
		return e.out && e.env != nil && e.env.Type == protocol.TypeChatMessageAck && ackOf(e).MessageID == f3
	}); !ok {
		stop("the last final was not acknowledged")
		return
	}
	s.printf("closing connection %d; accepted finals must not come back", n2)
	mark = s.mark()
	s.closeConn(n2, "scripted reconnect")
	n3, ok := s.reconnected(ctx, mark, n2, ch, t)
	if !ok {
		stop("no second reconnect with the channel reopened")
		return
	}
	s.mu.Lock()
	s.facts.conns, s.facts.phase = append(s.facts.conns, n3), 3
	s.mu.Unlock()
	s.otherFiles(ctx, n3, ch, tag, t)
	s.sleep(ctx, quiet)
	s.mu.Lock()
	s.facts.phase = 4
	s.mu.Unlock()
	s.printf("script done")
}

// otherFiles sends, on connection n, the two files whose address is not a
// relative download_url: P1, an IM v1 message.push whose file has only a
// url (IM v1 section 9), when the connection negotiated xagent.im.v1; and
// M4, a chat.message whose file's download_url is a signed URL on another
// origin (IM v2 sections 3 and 5.3), when one is known (see
// Options.OtherOrigin). It waits for P1's file to be fetched and for M4's
// ack; the judges read what happened.
func (s *Server) otherFiles(ctx context.Context, n int, ch, tag string, t time.Duration) {
	if s.negotiated(n, protocol.ProfileIMv1) {
		p1 := protocol.MessagePushPayload{Provider: "xagent-check", Profile: protocol.ProfileIMv1, EventKind: protocol.IMv1EventMessageReceived,
			MessageID: "xc-p1-" + tag, SenderID: "xc-user", SenderName: "xAgent check", ChatType: "p2p", MessageType: "file", RawText: "",
			Text:  "User message from xAgent check:\nSender: xAgent check\nConversation type: p2p\nMessage type: file\nUser text: none",
			Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: v1Ref, Filename: "check-v1.txt", MimeType: "text/plain", URL: s.sign(v1Ref)}}}
		s.mu.Lock()
		s.facts.p1 = p1
		s.mu.Unlock()
		s.printf("sending P1, an IM v1 message.push whose file has only a url")
		mark := s.mark()
		s.sendPacket(n, ch, protocol.TypeMessagePush, p1)
		s.await(ctx, mark, t, fetchOf(v1Ref)) // judged by xagent.imv1-file-url
	} else {
		s.mu.Lock()
		s.facts.noP1 = "the xAgent did not negotiate xagent.im.v1 (its hello's supported_profiles)"
		s.mu.Unlock()
	}
	other := s.otherOrigin()
	if other == "" {
		s.mu.Lock()
		s.facts.noM4 = "no other origin reaches the scripted server: give one with Options.OtherOrigin (xconn check --xagent --other-origin)"
		s.mu.Unlock()
		return
	}
	m4 := protocol.ChatMessagePayload{MessageID: "xc-m4-" + tag, Text: "xagent check: a file on another origin",
		Files: []protocol.ChatFile{{Type: protocol.FileFile, FileRef: otherRef, Filename: "check-cdn.txt", MimeType: "text/plain",
			DownloadURL: other + s.sign(otherRef)}}}
	s.mu.Lock()
	s.facts.m4, s.facts.other = m4, other
	s.mu.Unlock()
	s.printf("sending M4, whose file is a signed URL on %s", other)
	mark := s.mark()
	s.push(n, ch, m4)
	s.await(ctx, mark, t, ackFor(m4.MessageID)) // judged by xagent.download-other-origin
}

// fetchOf matches the GET of the inbound file ref.
func fetchOf(ref string) func(event) bool {
	return func(e event) bool { return e.kind == "http" && e.method == "GET" && e.fileRef == ref }
}

// notOpenChannel is a channel id the Server never hands out.
const notOpenChannel = "cch_xc_never_opened"

// reconnected waits for a hello on a connection other than prev and for
// the channel ch reopened on it.
func (s *Server) reconnected(ctx context.Context, mark, prev int, ch string, t time.Duration) (int, bool) {
	ev, ok := s.await(ctx, mark, t, func(e event) bool {
		return !e.out && e.kind == "packet" && e.conn != prev && e.env.Type == protocol.TypeHello
	})
	if !ok {
		return 0, false
	}
	n := ev.conn
	_, ok = s.await(ctx, mark, t, func(e event) bool {
		return e.out && e.conn == n && e.env != nil && e.env.Type == protocol.TypeChannelOpenAck && e.env.ConnectorChannelID == ch
	})
	return n, ok
}

// mark returns the index of the next event.
func (s *Server) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// indexAfter returns the index after ev in the log.
func (s *Server) indexAfter(ev event) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.events) - 1; i >= 0; i-- {
		if s.events[i].at == ev.at && s.events[i].env == ev.env {
			return i + 1
		}
	}
	return len(s.events)
}

// await returns the first event at or after index from that matches,
// waiting at most d.
func (s *Server) await(ctx context.Context, from int, d time.Duration, match func(event) bool) (event, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		for ; from < len(s.events); from++ {
			if match(s.events[from]) {
				ev := s.events[from]
				s.mu.Unlock()
				return ev, true
			}
		}
		wake := s.notify
		s.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			return event{}, false
		case <-ctx.Done():
			return event{}, false
		}
	}
}

func (s *Server) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// signedInAck returns the channel of an auth ack the Server sent with
// status authenticated, or "".
func signedInAck(e event) string {
	if !e.out || e.env == nil || (e.env.Type != protocol.TypeAuthStartAck && e.env.Type != protocol.TypeAuthStatusAck) || e.env.Error != nil {
		return ""
	}
	var st protocol.AuthStatePayload
	if e.env.DecodePayload(&st) != nil || st.Status != protocol.AuthAuthenticated {
		return ""
	}
	return e.env.ConnectorChannelID
}

// ackFor matches a chat.message.ack from xAgent for message id.
func ackFor(id string) func(event) bool {
	return func(e event) bool {
		if e.out || e.env == nil || e.env.Type != protocol.TypeChatMessageAck {
			return false
		}
		var a protocol.ChatAckPayload
		return e.env.DecodePayload(&a) == nil && a.MessageID == id
	}
}

// finalOn matches a chat.message from xAgent on ch whose message_id
// passes want (any when nil).
func finalOn(ch string, want func(string) bool) func(event) bool {
	return func(e event) bool {
		if e.out || e.env == nil || e.env.Type != protocol.TypeChatMessage || e.env.ConnectorChannelID != ch {
			return false
		}
		return want == nil || want(payloadOf(e).MessageID)
	}
}

func payloadOf(e event) protocol.ChatMessagePayload {
	var p protocol.ChatMessagePayload
	if e.env != nil {
		_ = e.env.DecodePayload(&p)
	}
	return p
}

func packetID(e *protocol.Envelope) string {
	if e == nil {
		return ""
	}
	return e.PacketID
}

// runTag returns 8 random hex digits, so that message ids differ between
// runs against an xAgent that keeps its inbox.
func runTag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
