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
	"path"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

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
	// tokens are signed URL tokens the Connector handed out (sig values,
	// QR codes and their tokens): redacted from every report, but not
	// leaks, since the Connector is meant to send them.
	tokens []string

	card      *protocol.Card
	cardError string
	skill     skillState

	primary   *wsConn
	channelID string // opened on primary; signed in by the auth probe
	// primaryLost says why the main connection or channel is gone, for
	// the skips of the probes that needed it.
	primaryLost string
	// reissued records the channel ids the Connector reissued on reopen
	// (section 8.3) and the suite adopted, "old → new" each.
	reissued      []string
	version       versionState
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

// redact replaces every secret and signed token in text and bounds its
// length, cutting on a rune boundary.
func (s *session) redact(text string) string {
	return cutRunes(s.scrub(text), maxPacketShown)
}

// scrub replaces every secret given to the run, every signed token the
// Connector handed out and every sig= (or token=) URL query value in text.
func (s *session) scrub(text string) string {
	for _, list := range [][]string{s.secrets, s.tokens} {
		for _, sec := range list {
			if len(sec) >= 3 {
				text = strings.ReplaceAll(text, sec, "[redacted]")
			}
		}
	}
	return signedQuery.ReplaceAllString(text, "${1}[redacted]")
}

// signedQuery matches the value of a URL query parameter that carries a
// signature or a token, in a URL or a JSON string holding one.
var signedQuery = regexp.MustCompile(`((?:[?&]|%3[Ff]|%26|\\u0026)(?:sig|signature|token|access_token|qr_token|ticket)=)[^&\s"'<>\\]+`)

// addToken registers a signed token handed out by the Connector for
// redaction: the whole value, and each query value and long path segment
// of a URL.
func (s *session) addToken(v string) {
	if len(v) < 8 || slices.Contains(s.tokens, v) {
		return
	}
	s.tokens = append(s.tokens, v)
	u, err := url.Parse(v)
	if err != nil {
		return
	}
	for _, vals := range u.Query() {
		for _, q := range vals {
			if len(q) >= 8 && !slices.Contains(s.tokens, q) {
				s.tokens = append(s.tokens, q)
			}
		}
	}
	if u.Scheme != "" {
		seg := path.Base(u.Path)
		if len(seg) >= 16 && !slices.Contains(s.tokens, seg) {
			s.tokens = append(s.tokens, seg)
		}
	}
}

// cutRunes bounds s to at most n bytes, cut on a rune boundary, with "…"
// when it was cut.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
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

func truncate(s string, n int) string { return cutRunes(s, n) }

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
				if ack.ConnectorChannelID != "" && ack.ConnectorChannelID != ch {
					ch = ack.ConnectorChannelID // reissued on reopen (section 8.3)
				}
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

// PreflightError is returned by [Check] when the run cannot start because
// of the caller's setup, not because of the Connector's conformance:
// nothing answers at the Base URL, or the Connector refuses the API key.
// Sentence says so in one sentence.
type PreflightError struct {
	Sentence string
	Err      error
}

func (e *PreflightError) Error() string { return e.Sentence }

func (e *PreflightError) Unwrap() error { return e.Err }

// preflight stops the run with one sentence when the Base URL does not
// answer or the API key is refused, instead of a report that fails every
// requirement for that one reason.
func (s *session) preflight(ctx context.Context) error {
	base := s.base.Redacted()
	if _, err := s.get(ctx, protocol.PathCard, ""); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("conformance: %w", ctx.Err())
		}
		return &PreflightError{Err: err, Sentence: fmt.Sprintf(
			"Nothing answers at %s (GET %s: %s): start the Connector Server or correct the Base URL.", base, protocol.PathCard, s.redact(rootCause(err)))}
	}
	res, err := s.get(ctx, protocol.PathHealth, s.opts.APIKey)
	if err != nil || (res.status != http.StatusUnauthorized && res.status != http.StatusForbidden) {
		return nil // anything else is the report's business
	}
	if s.opts.APIKey == "" {
		return &PreflightError{Sentence: fmt.Sprintf(
			"The Connector at %s requires an API key (GET %s answered HTTP %d without one): pass it with --api-key or XCONN_API_KEY (Options.APIKey).", base, protocol.PathHealth, res.status)}
	}
	return &PreflightError{Sentence: fmt.Sprintf(
		"The Connector at %s refused the API key (GET %s answered HTTP %d): check --api-key or XCONN_API_KEY (Options.APIKey).", base, protocol.PathHealth, res.status)}
}

// rootCause returns the innermost error text, without the wrapping
// "GET url:" prefixes.
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
