package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skip2/go-qrcode"
	"github.com/xconn/xconn/protocol"
)

// probeAuthenticate signs the main channel in with the selected flow: a form
// flow with the given inputs, or a QR flow confirmed by a person (the QR is
// printed to Options.Out) or by fetching its URL (Options.AuthOpenURL).
func probeAuthenticate(ctx context.Context, s *session, r *recorder) {
	if ok, why := s.has(CapAuthFlowSelected); !ok {
		r.skipRest(why)
		return
	}
	if !needPrimary(s, r) {
		return
	}
	flow, _ := s.card.AuthFlow(s.opts.AuthFlow)
	c := s.primary
	// From here on the channel may end up signed in: finish signs it out.
	s.signIn.channel, s.signIn.connectorID = s.channelID, c.helloAck.ConnectorID
	f, err := c.request(ctx, c.newEnvelope(protocol.TypeAuthStart, s.channelID, protocol.AuthStartPayload{FlowID: flow.ID, Input: s.opts.AuthInput}))
	st, ok := authState(f, err, protocol.TypeAuthStartAck)
	if !ok {
		r.fail("auth.authenticated", "auth.start.ack", describe(f, err), s.redact(string(f.data)))
		return
	}
	wait := s.opts.timeout() * 4
	if flow.Type == protocol.AuthFlowQRLogin {
		wait = s.opts.qrWait()
		s.presentQR(ctx, st)
	}
	deadline := time.Now().Add(wait)
	for st.Status != protocol.AuthAuthenticated {
		if oneOf(st.Status, protocol.AuthFailed, protocol.AuthExpired, protocol.AuthUnauthenticated) || time.Now().After(deadline) {
			r.fail("auth.authenticated", "status authenticated", fmt.Sprintf("status %q: %s", st.Status, st.Message), s.redact(string(f.data)))
			return
		}
		if st.Status == protocol.AuthQRRefreshRequired {
			f, err = c.request(ctx, c.newEnvelope(protocol.TypeAuthStatus, s.channelID, protocol.AuthStatusPayload{FlowID: flow.ID, AuthSessionID: st.AuthSessionID, Refresh: true}))
			if next, ok := authState(f, err, protocol.TypeAuthStatusAck); ok {
				st = next
				s.presentQR(ctx, st)
			}
			continue
		}
		pause := time.Duration(st.PollIntervalMillis) * time.Millisecond
		pause = min(max(pause, 100*time.Millisecond), 2*time.Second)
		select {
		case <-ctx.Done():
			r.skipRest(ctx.Err().Error())
			return
		case <-time.After(pause):
		}
		session := st.AuthSessionID
		f, err = c.request(ctx, c.newEnvelope(protocol.TypeAuthStatus, s.channelID, protocol.AuthStatusPayload{FlowID: flow.ID, AuthSessionID: session}))
		next, ok := authState(f, err, protocol.TypeAuthStatusAck)
		if !ok {
			r.fail("auth.authenticated", "auth.status.ack", describe(f, err), s.redact(string(f.data)))
			return
		}
		if next.AuthSessionID == "" {
			next.AuthSessionID = session
		}
		st = next
	}
	d := st.ConnectionDescriptor
	if d == nil || !d.Authenticated() {
		status := "no Descriptor"
		if d != nil {
			status = "Descriptor status " + d.Connection.Status
		}
		r.fail("auth.authenticated", "authenticated with a signed-in Descriptor", status, s.redact(string(f.data)))
		return
	}
	r.pass("auth.authenticated")
	s.authDesc = d
}

// authState decodes an auth.start.ack or auth.status.ack.
func authState(f frame, err error, typ string) (protocol.AuthStatePayload, bool) {
	var st protocol.AuthStatePayload
	if err != nil || f.env.Type != typ || f.env.Error != nil || f.env.DecodePayload(&st) != nil {
		return st, false
	}
	if st.ConnectionDescriptor != nil {
		protocol.NormalizeDescriptor(st.ConnectionDescriptor) // a v1 Descriptor as xAgent reads it (section 12)
	}
	return st, true
}

// presentQR shows the QR code of a pending QR flow, or confirms it by URL.
func (s *session) presentQR(ctx context.Context, st protocol.AuthStatePayload) {
	out := s.opts.out()
	if st.QRCodeText == "" {
		if st.QRCodeImage != "" {
			fmt.Fprintln(out, "Open this QR image and scan it:", st.QRCodeImage)
		}
		return
	}
	if s.opts.AuthOpenURL {
		u, err := url.Parse(st.QRCodeText)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			fmt.Fprintln(out, "qr_code_text is not an http(s) URL; cannot confirm it")
			return
		}
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			res, err := s.do(ctx, m, u, "", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, strings.NewReader(""))
			if err != nil {
				fmt.Fprintln(out, m, "QR URL failed:", err)
			} else {
				fmt.Fprintf(out, "%s QR URL: HTTP %d\n", m, res.status)
			}
		}
		return
	}
	fmt.Fprintf(out, "Scan this QR code within %s to sign in:\n", s.opts.qrWait())
	if q, err := qrcode.New(st.QRCodeText, qrcode.Low); err == nil {
		fmt.Fprintln(out, q.ToSmallString(false))
	} else {
		fmt.Fprintln(out, st.QRCodeText)
	}
}

// channelArgs returns {"connector_channel_id": ch}.
func channelArgs(ch string) json.RawMessage {
	b, _ := json.Marshal(struct {
		ID string `json:"connector_channel_id"`
	}{ch})
	return b
}

func mustJSON(v string) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// probeLogout signs the run's channel out with auth.logout as the last
// scenario, after every other check used the signed-in channel (section
// 8.13): on a new connection with the sign-in's connector_id that reopens
// the channel (adopting a reissued id), since the aggregates probe closed
// the others. The ack must say ok, and neither its Descriptor nor a
// connection.descriptor.get afterwards may show the channel signed in.
// When it succeeds, the run's final sign-out has nothing left to do.
func probeLogout(ctx context.Context, s *session, r *recorder) {
	if !needCard(s, r) {
		return
	}
	ch, connectorID := s.signIn.channel, s.signIn.connectorID
	if ch == "" {
		r.skipRest("no signed-in channel to sign out")
		return
	}
	c, err := s.openHello(ctx, connectorID)
	if err != nil {
		r.skipRest("no connection to sign the channel out on: " + err.Error())
		return
	}
	f, ack, err := s.openChannel(ctx, c, ch)
	if err != nil || ack == nil {
		r.skipRest("the signed-in channel did not reopen: " + describe(f, err))
		return
	}
	if ack.ConnectorChannelID != "" && ack.ConnectorChannelID != ch {
		ch = ack.ConnectorChannelID // reissued on reopen (section 8.3)
		s.signIn.channel = ch
	}
	f, err = c.request(ctx, c.newEnvelope(protocol.TypeAuthLogout, ch, protocol.EmptyPayload{}))
	packet := s.redact(string(f.data))
	var la protocol.AuthLogoutAckPayload
	if err != nil || f.env.Type != protocol.TypeAuthLogoutAck || f.env.Error != nil || f.env.DecodePayload(&la) != nil || la.Status != "ok" {
		actual := describe(f, err)
		if err == nil && f.env.Type == protocol.TypeAuthLogoutAck && f.env.Error == nil {
			actual = fmt.Sprintf("auth.logout.ack with status %q", la.Status)
		}
		r.fail("auth.logout", "auth.logout.ack with status ok", actual, packet)
		return
	}
	if d := la.ConnectionDescriptor; d != nil {
		protocol.NormalizeDescriptor(d)
		if d.Authenticated() {
			r.fail("auth.logout", "a Descriptor that is no longer signed in", "auth.logout.ack Descriptor status "+d.Connection.Status, packet)
			return
		}
	}
	f, err = c.request(ctx, c.newEnvelope(protocol.TypeDescriptorGet, ch, protocol.EmptyPayload{}))
	var dp protocol.DescriptorPayload
	if err == nil && f.env.Type == protocol.TypeDescriptorGetAck && f.env.Error == nil && f.env.DecodePayload(&dp) == nil && dp.ConnectionDescriptor != nil {
		protocol.NormalizeDescriptor(dp.ConnectionDescriptor)
		if dp.ConnectionDescriptor.Authenticated() {
			r.fail("auth.logout", "connection.descriptor.get after auth.logout shows the channel not signed in",
				"Descriptor status "+dp.ConnectionDescriptor.Connection.Status, s.redact(string(f.data)))
			return
		}
	}
	r.pass("auth.logout")
	s.signIn.channel = ""
	fmt.Fprintf(s.opts.out(), "signed channel %s out (auth.logout)\n", ch)
}
