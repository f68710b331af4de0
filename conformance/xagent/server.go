package xagent

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/xconn/xconn/protocol"
)

// Fixed values of the scripted Connector.
const (
	// CardID is the connector_card_id of the scripted Connector.
	CardID = "im.xagent-check"
	// FormFlow is its form flow: one required secret field, "code"; any
	// non-empty value signs in.
	FormFlow = "xagent_check_form"
	// QRFlow is its QR flow, which signs in without a person (see the
	// package documentation).
	QRFlow = "xagent_check_qr"
	// ToolID is its one tool: it echoes the "text" argument.
	ToolID = "xagent_check_echo"
	// QRPollInterval is the poll_interval_millis of a QR session.
	QRPollInterval = 300 * time.Millisecond
	// InboundFile is the content of the files the script sends (M3, P1,
	// M4).
	InboundFile = "xagent check inbound file\n"
)

// Defaults of a run.
const (
	// DefaultTimeout bounds each wait of the script for the xAgent.
	DefaultTimeout = 30 * time.Second
	// DefaultQuiet is how long the script watches for accepted finals
	// coming back, and for a second reply to a duplicate.
	DefaultQuiet = 2 * time.Second
	// DefaultSignInWait bounds the wait for the first signed-in channel.
	DefaultSignInWait = 10 * time.Minute
	maxFrame          = 1 << 20
	maxConns          = 16 // concurrent /ws connections
	closeWait         = time.Second
	maxUpload         = 4 << 20
	maxEvents         = 4096
)

// Options configures a [Server]. The zero value requires no API key.
type Options struct {
	// APIKey is the system API key the xAgent must send as Authorization:
	// Bearer to /health, /ws and /files/uploads; "" requires none (and
	// skips the checks of the key). A request without it is recorded as a
	// failure but served, so that the script can go on.
	APIKey string
	// Timeout bounds each wait of the script for the xAgent; default
	// DefaultTimeout.
	Timeout time.Duration
	// Quiet is how long the script watches for an accepted final coming
	// back and for a second reply to a duplicate; default DefaultQuiet.
	Quiet time.Duration
	// SignInWait bounds the wait for the xAgent to sign a channel in;
	// default DefaultSignInWait.
	SignInWait time.Duration
	// Only and Skip select requirement IDs by path.Match patterns.
	Only, Skip []string
	// Strict makes SHOULD failures fail the run.
	Strict bool
	// Out receives the script's progress lines; nil discards.
	Out io.Writer
	// OtherOrigin is another origin (scheme://host[:port]) at which the
	// xAgent reaches this server, for the signed download URL of M4 that
	// xagent.download-other-origin checks. Default: the loopback alias of
	// the host the xAgent fetched the Card from (127.0.0.1 and localhost,
	// [::1] and localhost); without either the check is skipped.
	OtherOrigin string
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o Options) quiet() time.Duration {
	if o.Quiet > 0 {
		return o.Quiet
	}
	return DefaultQuiet
}

func (o Options) signInWait() time.Duration {
	if o.SignInWait > 0 {
		return o.SignInWait
	}
	return DefaultSignInWait
}

// event is one thing the Server saw or did, in order.
type event struct {
	at   time.Time
	conn int // connection number from 1; 0 for plain HTTP
	// out marks a packet the Server sent.
	out bool
	// kind: "http", "handshake", "packet", "frame" (not a packet), "closed"
	kind string
	// http requests and handshakes; host is the request's Host header
	method, path, channelHeader, host string
	keyOK, hasKey, subprotocol        bool
	fileRef                           string // an upload's returned file_ref, or a download's
	// packets
	env *protocol.Envelope
	raw []byte
}

// Server is the scripted Connector Server. Create it with [NewServer],
// serve it with any http.Server, end it with Close.
type Server struct {
	opts   Options
	card   protocol.Card
	mux    *http.ServeMux
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed when the script ends

	mu     sync.Mutex
	events []event
	notify chan struct{} // closed and replaced on each event
	closed bool
	seq    int
	conns  map[int]*conn
	// connSeq numbers the connections from 1.
	connSeq int
	chans   map[string]*channel
	auths   map[string]*authSession
	files   map[string]upload // uploaded file_refs
	// helloIDs are the connector_ids the script hands out per connection.
	lastID     string
	replaceID  bool
	holdFinals bool // leave finals unacknowledged (phase 1)
	rejectNext bool // reject the next final as retryable
	// sigs are the signatures of the inbound files' URLs by file_ref.
	sigs map[string]string
	// cardHost is the Host of the first Card request: how the xAgent
	// reaches this server.
	cardHost string
	facts    facts
}

type channel struct {
	id     string
	authed bool
}

type authSession struct {
	id, channel, flow string
	polls             int
	refreshed         bool
	canceled          bool
	lastStatus        string
}

type upload struct {
	channel string
	at      time.Time
}

// Validate reports a malformed Only or Skip pattern (a
// *conformance.PatternError, wrapped) or an OtherOrigin that is not an
// origin; NewServer calls it.
func (o Options) Validate() error {
	if _, err := Select(o.Only, o.Skip); err != nil {
		return fmt.Errorf("xagent: %w", err)
	}
	if o.OtherOrigin != "" {
		u, err := url.Parse(o.OtherOrigin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("xagent: Options.OtherOrigin %q is not an origin (scheme://host[:port])", o.OtherOrigin)
		}
	}
	return nil
}

// NewServer returns a Server whose script starts at once: it waits for
// the xAgent to sign a channel in. A malformed Only/Skip pattern is an
// error.
func NewServer(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: opts, ctx: ctx, cancel: cancel, done: make(chan struct{}), notify: make(chan struct{}),
		conns: map[int]*conn{}, chans: map[string]*channel{}, auths: map[string]*authSession{}, files: map[string]upload{}, sigs: map[string]string{}}
	s.card = scriptCard(opts.APIKey != "")
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET "+protocol.PathCard, s.serveCard)
	s.mux.HandleFunc("GET "+protocol.PathSkill, s.serveSkill)
	s.mux.HandleFunc("GET "+protocol.PathHealth, s.serveHealth)
	s.mux.HandleFunc("GET "+protocol.PathWS, s.serveWS)
	s.mux.HandleFunc("POST "+protocol.PathFileUploads, s.serveUpload)
	s.mux.HandleFunc("GET "+protocol.PathFileRefsPrefix+"{ref}", s.serveFile)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(s.done)
		s.script(ctx)
	}()
	return s, nil
}

// ServeHTTP serves the scripted Connector's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Card returns the scripted Connector's Card.
func (s *Server) Card() protocol.Card { return s.card }

// Wait blocks until the script has ended or ctx ends.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the script and every connection, each with a close frame
// (going away; dropped after closeWait without the peer's answer), and
// waits for them. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = c.ws.Close(websocket.StatusGoingAway, "xagent check done")
			}()
			t := time.NewTimer(closeWait)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				c.ws.CloseNow()
				<-done
			}
		}()
	}
	wg.Wait()
	s.cancel()
	s.wg.Wait()
}

// record appends ev to the log and wakes the script.
func (s *Server) record(ev event) {
	ev.at = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) < maxEvents {
		s.events = append(s.events, ev)
	}
	close(s.notify)
	s.notify = make(chan struct{})
}

func (s *Server) next(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s%d", prefix, s.seq)
}

func (s *Server) printf(format string, args ...any) {
	if s.opts.Out != nil {
		fmt.Fprintf(s.opts.Out, format+"\n", args...)
	}
}

// key reports whether r carries an Authorization header and whether it is
// the API key (compared in constant time; always true without a key).
func (s *Server) key(r *http.Request) (has, ok bool) {
	h := r.Header.Get("Authorization")
	if s.opts.APIKey == "" {
		return h != "", true
	}
	got, found := strings.CutPrefix(h, "Bearer ")
	return h != "", found && subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) == 1
}

func (s *Server) recordHTTP(r *http.Request, fileRef string) {
	has, ok := s.key(r)
	s.record(event{kind: "http", method: r.Method, path: r.URL.Path, channelHeader: r.Header.Get(protocol.HeaderChannelID),
		host: r.Host, hasKey: has, keyOK: ok, fileRef: fileRef})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // the client went away
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.cardHost == "" {
		s.cardHost = r.Host
	}
	s.mu.Unlock()
	s.recordHTTP(r, "")
	writeJSON(w, s.card)
}

func (s *Server) serveSkill(w http.ResponseWriter, r *http.Request) {
	s.recordHTTP(r, "")
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	fmt.Fprint(w, "---\nname: "+protocol.PrimarySkillName(CardID)+"\ndescription: The scripted Connector of the xAgent-side conformance suite.\n---\n\n# xAgent check\n\nUse "+ToolID+" to echo text.\n")
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	s.recordHTTP(r, "")
	b := s.card.Build
	writeJSON(w, protocol.HealthResponse{Status: "ok", ConnectorCardID: CardID, ConnectorCardVersion: s.card.Connector.Version,
		ProtocolVersion: s.card.ProtocolVersion, Build: &b})
}

func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	ch := r.Header.Get(protocol.HeaderChannelID)
	r.Body = http.MaxBytesReader(w, r.Body, maxUpload)
	f, hdr, err := r.FormFile("file")
	if err != nil {
		s.recordHTTP(r, "")
		http.Error(w, "file required", http.StatusBadRequest)
		return
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	if err != nil {
		s.recordHTTP(r, "")
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	ref := s.next("file_xc_up_")
	s.mu.Lock()
	s.files[ref] = upload{channel: ch, at: time.Now()}
	s.mu.Unlock()
	s.recordHTTP(r, ref)
	writeJSON(w, protocol.UploadResponse{FileRef: ref, FileType: protocol.FileFile, Filename: hdr.Filename, ByteSize: n,
		ExpiresAt: time.Now().Add(time.Hour).UnixMilli()})
}

// serveFile serves an inbound file (of M3, P1 or M4) to its signed URL.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("ref")
	s.mu.Lock()
	sig := s.sigs[ref]
	s.mu.Unlock()
	got := r.URL.Query().Get("sig")
	if sig == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sig)) != 1 {
		s.recordHTTP(r, "")
		http.NotFound(w, r)
		return
	}
	s.recordHTTP(r, ref)
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Disposition", `attachment; filename="check.txt"`)
	_, _ = io.WriteString(w, InboundFile)
}

// The file_refs of the inbound files: M3's (a relative download_url),
// P1's (an IM v1 url) and M4's (a signed URL on another origin).
const (
	inboundRef = "file_xc_in_1"
	v1Ref      = "file_xc_v1_url"
	otherRef   = "file_xc_other_origin"
)

// sign makes the signed URL path of ref, as a Connector hands out a
// short-lived, unguessable URL (section 3).
func (s *Server) sign(ref string) string {
	sig := runTag() + runTag()
	s.mu.Lock()
	s.sigs[ref] = sig
	s.mu.Unlock()
	return protocol.PathFileRefsPrefix + ref + "?sig=" + sig
}

// otherOrigin returns the origin M4's URL uses: Options.OtherOrigin, else
// the loopback alias of the Card request's host, else "".
func (s *Server) otherOrigin() string {
	if s.opts.OtherOrigin != "" {
		return strings.TrimRight(s.opts.OtherOrigin, "/")
	}
	s.mu.Lock()
	h := s.cardHost
	s.mu.Unlock()
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = h, ""
	}
	alias := map[string]string{"127.0.0.1": "localhost", "localhost": "127.0.0.1", "::1": "localhost"}[strings.ToLower(host)]
	if alias == "" {
		return ""
	}
	if port != "" {
		alias = net.JoinHostPort(alias, port)
	}
	return "http://" + alias
}

func scriptCard(keyRequired bool) protocol.Card {
	schema := json.RawMessage(`{"type":"object","required":["connector_channel_id","text"],"properties":{` +
		`"connector_channel_id":{"type":"string","description":"Target user-level Connector channel ID."},` +
		`"text":{"type":"string","description":"Text to echo."}}}`)
	return protocol.Card{
		Schema: protocol.CardSchema, ProtocolVersion: protocol.ProtocolVersion,
		Build:           protocol.Build{Version: "1.0.0", GitTag: "v1.0.0", GitRev: "0000000", BuildTime: "2612030000"},
		ConnectorCardID: CardID,
		Connector:       protocol.CardInfo{Name: "xAgent check", Version: "1.0.0", Vendor: "xconn"},
		// Both IM Profiles (IM v1 section 3 lets xAgent serve both): IM v2
		// for the script, IM v1 for the message.push of P1.
		Supports: protocol.Supports{UserChannelMode: protocol.UserChannelMultiple, TargetTypes: []string{protocol.TargetIM},
			Targets:  []protocol.Target{{TargetType: protocol.TargetIM, Provider: "xagent-check", Label: "xAgent check"}},
			Profiles: []protocol.Profile{protocol.ProfileIMv2, protocol.ProfileIMv1}},
		Tools: []protocol.Tool{{ToolID: ToolID, Profile: protocol.ProfileIMv2, Title: "Echo", Description: "Echo text.",
			RelatedSkillIDs: []string{protocol.PrimarySkillName(CardID)}, InputSchema: schema, OutputSchema: json.RawMessage(`{"type":"object"}`)}},
		AuthFlows: []protocol.AuthFlow{
			{ID: FormFlow, TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm, Title: "Enter any code", Fields: []protocol.AuthField{
				{Name: "code", Label: "Code", InputType: protocol.InputPassword, Required: true, Secret: true}}},
			{ID: QRFlow, TargetType: protocol.TargetIM, Type: protocol.AuthFlowQRLogin, Title: "Scripted QR sign-in"},
		},
		Security: &protocol.Security{TrustLevel: protocol.TrustLocal, APIKeyRequired: keyRequired, DataClasses: []string{"message"}},
	}
}

// closeConn closes connection n with a close frame, as the script does to
// make the xAgent reconnect.
func (s *Server) closeConn(n int, reason string) {
	s.mu.Lock()
	c := s.conns[n]
	s.mu.Unlock()
	if c != nil {
		c.closing.Store(true)
		// Every packet already recorded is written first: an empty
		// critical section waits for the write in progress.
		c.wmu.Lock()
		c.wmu.Unlock() //nolint:staticcheck
		// The script runs inside wg, so Close still waits for this.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = c.ws.Close(websocket.StatusServiceRestart, reason) // the handler's read ends too
		}()
	}
}
