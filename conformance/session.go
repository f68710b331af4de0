package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/xconn/xconn/protocol"
)

// session is the state of one run: what was fetched, the connections and
// channels it opened, and what it observed. Only the goroutine running the
// checks uses it.
type session struct {
	ctx     context.Context // the run's context, for lazy capability probes
	base    *url.URL
	opts    Options
	http    *http.Client
	seq     atomic.Int64
	secrets []string

	card      *protocol.Card
	cardError string
	skill     skillState

	primary       *wsConn
	channelID     string // opened on primary; signed in by the auth probe
	closedChannel string // a channel the run closed
	tag           string // per-run suffix of message ids
	waitedInbound bool
	authDesc      *protocol.Descriptor
	conns         []*wsConn
	// signIn is the channel auth.start was sent for by the auth probe and
	// the connector_id it was open under; finish signs it out.
	signIn  struct{ channel, connectorID string }
	inbound inboundState

	obs    observations
	upload uploadState
}

type skillState struct {
	fetched bool
	status  int
	name    string
}

// newSession prepares a run against baseURL.
func newSession(baseURL string, opts Options) (*session, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("conformance: parse Base URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("conformance: Base URL %q: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("conformance: Base URL %q: a host is required", u.Redacted())
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("conformance: Base URL %q: userinfo, query and fragment are forbidden", u.Redacted())
	}
	if len(opts.ToolArgs) > 0 {
		if opts.Tool == "" {
			return nil, errors.New("conformance: ToolArgs given without Tool")
		}
		if _, ok := jsonObject(opts.ToolArgs); !ok {
			return nil, errors.New("conformance: ToolArgs must be a JSON object")
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	// A transport of its own, so that finish can close its idle connections.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	s := &session{base: u, opts: opts, http: &http.Client{Timeout: opts.timeout(), Transport: tr}}
	if opts.APIKey != "" {
		s.secrets = append(s.secrets, opts.APIKey)
	}
	return s, nil
}

// setSecretsFromCard adds the secret auth inputs of the selected flow (every
// input when the flow is unknown) to the redaction list.
func (s *session) setSecretsFromCard() {
	var flow *protocol.AuthFlow
	if s.card != nil {
		flow, _ = s.card.AuthFlow(s.opts.AuthFlow)
	}
	for name, v := range s.opts.AuthInput {
		secret := flow == nil
		if flow != nil {
			for _, f := range flow.Fields {
				if f.Name == name && f.IsSecret() {
					secret = true
				}
			}
		}
		if secret && v != "" {
			s.secrets = append(s.secrets, v)
		}
	}
}

// endpoint returns the URL of a fixed endpoint under the Base URL.
func (s *session) endpoint(p string) *url.URL {
	u := *s.base
	u.Path = s.base.Path + p
	return &u
}

// redact replaces every secret in text and bounds its length.
func (s *session) redact(text string) string {
	for _, sec := range s.secrets {
		if len(sec) >= 3 {
			text = strings.ReplaceAll(text, sec, "[redacted]")
		}
	}
	if len(text) > maxPacketShown {
		text = text[:maxPacketShown] + "…"
	}
	return text
}

// leaks returns whether data holds a secret given to the run.
func (s *session) leaks(data []byte) bool {
	for _, sec := range s.secrets {
		if len(sec) >= 3 && bytes.Contains(data, []byte(sec)) {
			return true
		}
	}
	return false
}

// httpResult is one HTTP exchange of the suite.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

func (h httpResult) String() string {
	return fmt.Sprintf("HTTP %d %s", h.status, truncate(string(h.body), 300))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// do performs one HTTP request; key "" sends no Authorization header.
func (s *session) do(ctx context.Context, method string, u *url.URL, key string, header http.Header, body io.Reader) (httpResult, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return httpResult{}, fmt.Errorf("%s %s: read body: %w", method, u.Redacted(), err)
	}
	if s.leaks(data) {
		s.obs.leak(fmt.Sprintf("%s %s", method, u.Path), s.redact(string(data)))
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// get fetches a fixed endpoint with the configured API key.
func (s *session) get(ctx context.Context, p string, key string) (httpResult, error) {
	return s.do(ctx, http.MethodGet, s.endpoint(p), key, nil, nil)
}

// closeAll closes every connection of the run, observing queued frames.
func (s *session) closeAll() {
	for _, c := range s.conns {
		c.close()
	}
	s.conns = nil
	s.primary = nil
}

// finish ends the run: the channel it signed in is signed out, then every
// WebSocket and idle HTTP connection is closed.
func (s *session) finish() {
	s.signOut()
	s.closeAll()
	s.http.CloseIdleConnections()
}

// signOut sends auth.logout for the channel the run tried to sign in,
// whatever the verdicts: on the main connection while it is up, else on a
// new connection with the same connector_id that reopens the channel. It
// runs even when the run's context was canceled, bounded by one Timeout,
// and writes its outcome to Options.Out.
func (s *session) signOut() {
	ch, connectorID := s.signIn.channel, s.signIn.connectorID
	if ch == "" || s.card == nil {
		return
	}
	s.signIn.channel = ""
	parent := s.ctx
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), s.opts.timeout())
	defer cancel()
	err := errors.New("no connection")
	if s.primary != nil {
		err = s.logout(ctx, s.primary, ch)
	}
	if err != nil && ctx.Err() == nil {
		// The main connection is gone, or the channel is not open on it
		// any more: reopen it on a new connection.
		var c *wsConn
		c, err = s.openHello(ctx, connectorID)
		if err == nil {
			var f frame
			var ack *protocol.ChannelOpenAckPayload
			f, ack, err = s.openChannel(ctx, c, ch)
			switch {
			case err != nil:
				err = fmt.Errorf("channel.open: %w", err)
			case ack == nil:
				err = fmt.Errorf("channel.open answered by %s", describe(f, nil))
			default:
				err = s.logout(ctx, c, ch)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(s.opts.out(), "sign-out of channel %s failed: %s\n", ch, s.redact(err.Error()))
		return
	}
	fmt.Fprintf(s.opts.out(), "signed channel %s out (auth.logout)\n", ch)
}

// logout sends auth.logout for ch on c and checks its ack.
func (s *session) logout(ctx context.Context, c *wsConn, ch string) error {
	f, err := c.request(ctx, c.newEnvelope(protocol.TypeAuthLogout, ch, protocol.EmptyPayload{}))
	if err != nil {
		return fmt.Errorf("auth.logout: %w", err)
	}
	var ack protocol.AuthLogoutAckPayload
	if f.env.Type != protocol.TypeAuthLogoutAck || f.env.Error != nil || f.env.DecodePayload(&ack) != nil {
		return fmt.Errorf("auth.logout answered by %s", describe(f, nil))
	}
	return nil
}

// track registers a connection for closeAll.
func (s *session) track(c *wsConn) *wsConn {
	s.conns = append(s.conns, c)
	return c
}

// defaultProfiles is the supported_profiles of the suite's hello: every
// standard Profile, as an xAgent serving legacy and current Connectors does.
func defaultProfiles() []protocol.Profile {
	return []protocol.Profile{protocol.ProfileIMv1, protocol.ProfileIMv2, protocol.ProfileDeviceV1}
}

// helloPayload returns a well-formed hello for this Card.
func (s *session) helloPayload(connectorID string) protocol.HelloPayload {
	return protocol.HelloPayload{ConnectorCardID: s.card.ConnectorCardID, ConnectorID: connectorID,
		ProtocolVersion: protocol.ProtocolVersion, SupportedProfiles: defaultProfiles()}
}

// openHello dials /ws and completes a hello with connectorID ("" for a
// first connection).
func (s *session) openHello(ctx context.Context, connectorID string) (*wsConn, error) {
	return s.openHelloWith(ctx, s.helloPayload(connectorID))
}

// openHelloWith dials /ws and completes the hello p.
func (s *session) openHelloWith(ctx context.Context, p protocol.HelloPayload) (*wsConn, error) {
	c, _, err := s.dial(ctx, []string{protocol.Subprotocol}, s.opts.APIKey)
	if err != nil {
		return nil, err
	}
	s.track(c)
	f, err := c.hello(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	if c.helloAck == nil {
		return nil, fmt.Errorf("hello answered by %s", s.redact(string(f.data)))
	}
	return c, nil
}

// openChannel sends channel.open for id ("" for a new channel) and returns
// the answer and the channel id it names.
func (s *session) openChannel(ctx context.Context, c *wsConn, id string) (frame, *protocol.ChannelOpenAckPayload, error) {
	f, err := c.request(ctx, c.newEnvelope(protocol.TypeChannelOpen, id, protocol.EmptyPayload{}))
	if err != nil {
		return f, nil, err
	}
	if f.env.Type != protocol.TypeChannelOpenAck || f.env.Error != nil {
		return f, nil, nil
	}
	var ack protocol.ChannelOpenAckPayload
	if err := f.env.DecodePayload(&ack); err != nil {
		return f, nil, nil
	}
	return f, &ack, nil
}

// newChannel opens a fresh channel on c and returns its id.
func (s *session) newChannel(ctx context.Context, c *wsConn) (string, error) {
	f, ack, err := s.openChannel(ctx, c, "")
	if err != nil {
		return "", fmt.Errorf("channel.open: %w", err)
	}
	if ack == nil || ack.ConnectorChannelID == "" {
		return "", fmt.Errorf("channel.open answered by %s", s.redact(string(f.data)))
	}
	return ack.ConnectorChannelID, nil
}

// jsonObject decodes raw as a JSON object.
func jsonObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}
