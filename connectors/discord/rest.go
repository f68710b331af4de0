package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/xconn/xconn/connector"
)

// discordAPIPrefix is where discordgo's package-level endpoints point;
// the connector never changes them, its transport sends their requests
// to the configured API instead.
const discordAPIPrefix = "https://discord.com/api/"

// maxGatewayAnswer bounds the GET /gateway answer the transport rewrites.
const maxGatewayAnswer = 64 << 10

// restAPI is the connector's side of discordgo: the HTTP client every
// session uses (its transport rewrites https://discord.com/api to the
// configured API, and GET /gateway's URL to the configured Gateway), the
// WebSocket dialer of the Gateway (same proxy), and the wait on 429s.
// Shared by every channel and Gateway connection. Safe for concurrent
// use.
type restAPI struct {
	hc      *http.Client
	dialer  *websocket.Dialer
	timeout time.Duration
	rl      connector.RateLimit
}

// rewriter is the RoundTripper that points discordgo at the configured
// API and Gateway without touching discordgo's package variables.
type rewriter struct {
	next    http.RoundTripper
	api     *url.URL // nil: Discord's own
	gateway string   // "": the one the API answers
}

func (rw *rewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	isAPI := strings.HasPrefix(r.URL.String(), discordAPIPrefix)
	if isAPI && rw.api != nil {
		rest := strings.TrimPrefix(r.URL.Path, "/api")
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.URL.Path, r.URL.RawPath = rw.api.Scheme, rw.api.Host, strings.TrimSuffix(rw.api.Path, "/")+rest, ""
		r.Host = rw.api.Host
	}
	res, err := rw.next.RoundTrip(r)
	if err != nil || !isAPI || rw.gateway == "" || r.Method != http.MethodGet || res.StatusCode != http.StatusOK ||
		!(strings.HasSuffix(r.URL.Path, "/gateway") || strings.HasSuffix(r.URL.Path, "/gateway/bot")) {
		return res, err
	}
	// GET /gateway and /gateway/bot: hand out the configured Gateway.
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(io.LimitReader(res.Body, maxGatewayAnswer)).Decode(&body); err != nil {
		return nil, fmt.Errorf("discord: decode %s: %w", r.URL.Path, err)
	}
	body["url"] = rw.gateway
	raw, _ := json.Marshal(body)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	res.ContentLength = int64(len(raw))
	res.Header.Del("Content-Length")
	return res, nil
}

// newRESTAPI wraps the SDK's TargetAPI for discordgo.
func newRESTAPI(api *connector.TargetAPI, gatewayURL, proxy string, customTransport bool) (*restAPI, error) {
	rw := &rewriter{next: api.Client.Transport, gateway: gatewayURL}
	if rw.next == nil {
		rw.next = http.DefaultTransport
	}
	if api.BaseURL+"/" != discordAPIPrefix {
		u, err := url.Parse(api.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("Options.APIURL: %w", err)
		}
		rw.api = u
	}
	if gatewayURL != "" {
		u, err := url.Parse(gatewayURL)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, errors.New("Options.GatewayURL must be a ws:// or wss:// URL")
		}
	}
	hc := *api.Client
	hc.Transport = rw
	d := &websocket.Dialer{HandshakeTimeout: 30 * time.Second, Proxy: http.ProxyFromEnvironment}
	switch {
	case customTransport:
		d.Proxy = nil
	case proxy != "":
		u, err := url.Parse(proxy)
		if err != nil {
			return nil, errors.New("the proxy URL does not parse")
		}
		d.Proxy = http.ProxyURL(u)
	}
	return &restAPI{hc: &hc, dialer: d, timeout: api.Timeout, rl: api.RateLimit}, nil
}

// session returns a discordgo session for token that uses the
// connector's HTTP client and dialer, retries nothing by itself (429s
// and 5xx are the connector's to wait out or report), logs nothing (its
// logs would carry payloads), and leaves reconnecting to the caller.
func (a *restAPI) session(token string) *discordgo.Session {
	s, _ := discordgo.New("Bot " + token) // cannot fail for a bot token
	s.Client = a.hc
	d := *a.dialer
	s.Dialer = &d
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.SyncEvents = true
	s.StateEnabled = false
	s.LogLevel = -1
	s.UserAgent = "DiscordBot (https://github.com/xconn/xconn, " + ConnectorVersion + ")"
	s.Identify.Intents = intents
	s.Identify.Compress = false
	return s
}

// intents are the Gateway intents the connector asks for: messages in
// guild channels and DMs, with their content (privileged).
const intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// APIError is a refusal of Discord's REST API: the HTTP status, Discord's
// JSON error code and message (never the token: Discord does not echo
// it).
type APIError struct {
	Op      string
	Status  int
	Code    int
	Message string
}

func (e *APIError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("discord: %s: %d %s (code %d)", e.Op, e.Status, e.Message, e.Code)
	}
	return fmt.Sprintf("discord: %s: %d %s", e.Op, e.Status, e.Message)
}

// Temporary reports whether a retry may succeed: 429 and 5xx.
func (e *APIError) Temporary() bool { return e.Status == http.StatusTooManyRequests || e.Status >= 500 }

// transportError is a request that got no answer (network, proxy, TLS,
// timeout).
type transportError struct {
	op  string
	err error
}

func (e *transportError) Error() string { return "discord: " + e.op + ": " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// maxErrorText bounds the part of an unexpected answer kept in an error.
const maxErrorText = 200

// wrap turns a discordgo error into an *APIError, a
// *connector.RateLimitError around one, or a *transportError.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		var d time.Duration
		if rl.TooManyRequests != nil {
			d = min(max(rl.RetryAfter, 0), connector.MaxRetryAfter)
		}
		return &connector.RateLimitError{RetryAfter: d, Err: &APIError{Op: op, Status: http.StatusTooManyRequests, Message: "rate limited"}}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		e := &APIError{Op: op}
		if re.Response != nil {
			e.Status = re.Response.StatusCode
			e.Message = http.StatusText(e.Status)
		}
		if re.Message != nil {
			e.Code = re.Message.Code
			if re.Message.Message != "" {
				e.Message = truncate(re.Message.Message)
			}
		}
		return e
	}
	if errors.Is(err, discordgo.ErrJSONUnmarshal) {
		return &APIError{Op: op, Status: http.StatusBadGateway, Message: "unexpected answer"}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return &transportError{op: op, err: ue.Err}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &transportError{op: op, err: err}
	}
	// discordgo's own text ("Exceeded Max retries HTTP 502 ...").
	return &APIError{Op: op, Status: http.StatusBadGateway, Message: truncate(err.Error())}
}

func truncate(s string) string {
	if len(s) > maxErrorText {
		s = s[:maxErrorText] + "…"
	}
	return strings.ToValidUTF8(s, "")
}

// call runs one REST call with ctx (its timeout the API's), waiting out a
// 429 whose retry_after fits the rate-limit wait.
func (a *restAPI) call(ctx context.Context, op string, fn func(opt discordgo.RequestOption) error) error {
	return a.rl.Do(ctx, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, a.timeout)
			defer cancel()
		}
		return wrap(op, fn(discordgo.WithContext(ctx)))
	})
}

// isTemporary: 429, 5xx and transport failures are worth a retry.
func isTemporary(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var te *transportError
	return errors.As(err, &te) || connector.IsTemporary(err)
}

// isUnauthorized reports a token Discord no longer accepts (401).
func isUnauthorized(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusUnauthorized
}

// apiCode returns Discord's JSON error code of err (0 if none).
func apiCode(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}
