// Package wechattest is a fake WeChat iLink bot server for tests and for
// trying the WeChat connector by hand, built from the fact sheet's
// checklist (shared/targets/wechat-ilink.md §15): QR login with a
// scripted status sequence (expiry, redirect host, verify codes,
// binded_redirect), the bot endpoints with their header and base_info
// checks, the getupdates long poll with an opaque cursor, sendmessage,
// getuploadurl, getconfig/sendtyping, notifystart/notifystop, a CDN that
// stores AES-128-ECB ciphertext, and error injection (errcode -14, ret -2).
//
// Tests inject peer messages with Server.Inject (or POST /fake/inject) and
// inspect what the bot sent with Server.Sent (or GET /fake/sent). The QR
// code's text is a URL on the fake: opening it (GET or POST) scans and
// confirms the code, as a user's phone would.
package wechattest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultLongPoll    = 35 * time.Second
	DefaultQRLifetime  = 5 * time.Minute
	DefaultMaxMessages = 1000
	// MaxBodyBytes bounds a request body (CDN uploads included).
	MaxBodyBytes = 64 << 20
)

// Options configures a fake.
type Options struct {
	// LongPoll is how long getupdates holds a request without messages
	// (default DefaultLongPoll); it is also returned as
	// longpolling_timeout_ms.
	LongPoll time.Duration
	// QRLifetime is how long a QR code lives before its status becomes
	// expired (default DefaultQRLifetime).
	QRLifetime time.Duration
	// MediaKeys is how inbound media.aes_key values are encoded.
	MediaKeys KeyEncoding
	// MaxMessages bounds the retained inbound messages per account
	// (default DefaultMaxMessages).
	MaxMessages int
}

// Server is a running fake. Make one with Start; Close stops it. All
// methods are safe for concurrent use.
type Server struct {
	opts Options
	// URL is the API base (and login host); CDNURL the CDN base;
	// RedirectHost the host:port (no scheme) of a second listener that
	// scaned_but_redirect points at.
	URL, CDNURL, RedirectHost string

	main, redirect *http.Server
	wg             sync.WaitGroup
	done           chan struct{}

	mu         sync.Mutex
	qrs        map[string]*qrSession
	qrOrder    []string
	scripts    [][]string
	accounts   map[string]*account // by token
	byBot      map[string]*account
	lastBot    string
	uploads    map[string]*pendingUpload // by upload_param
	objects    map[string]*object        // by download param
	violations []string
	requests   []Request
	msgSeq     int64
}

// Request is one request the fake received (headers that matter).
type Request struct {
	Path string
	UIN  string
}

// Start serves a fake on two loopback listeners (the main host and the
// redirect host).
func Start(opts Options) (*Server, error) {
	if opts.LongPoll <= 0 {
		opts.LongPoll = DefaultLongPoll
	}
	if opts.QRLifetime <= 0 {
		opts.QRLifetime = DefaultQRLifetime
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("wechattest: listen: %w", err)
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("wechattest: listen: %w", err)
	}
	return serve(opts, ln, rln), nil
}

// Listen starts a fake whose main host listens on addr (for running it
// standalone); the redirect host takes a free loopback port.
func Listen(addr string, opts Options) (*Server, error) {
	if opts.LongPoll <= 0 {
		opts.LongPoll = DefaultLongPoll
	}
	if opts.QRLifetime <= 0 {
		opts.QRLifetime = DefaultQRLifetime
	}
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wechattest: listen: %w", err)
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("wechattest: listen: %w", err)
	}
	return serve(opts, ln, rln), nil
}

func serve(opts Options, ln, rln net.Listener) *Server {
	s := &Server{opts: opts, done: make(chan struct{}),
		URL: "http://" + ln.Addr().String(), RedirectHost: rln.Addr().String(),
		qrs: map[string]*qrSession{}, accounts: map[string]*account{}, byBot: map[string]*account{},
		uploads: map[string]*pendingUpload{}, objects: map[string]*object{}}
	s.CDNURL = s.URL + "/c2c"
	s.main = &http.Server{Handler: s.handler(false), ReadHeaderTimeout: 10 * time.Second}
	s.redirect = &http.Server{Handler: s.handler(true), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); _ = s.main.Serve(ln) }()
	go func() { defer s.wg.Done(); _ = s.redirect.Serve(rln) }()
	return s
}

// Close stops the fake: held long polls end at once.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.main.Close()
	s.redirect.Close()
	s.wg.Wait()
}

func (s *Server) handler(redirectHost bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ilink/bot/get_bot_qrcode", s.handleGetQR)
	mux.HandleFunc("GET /ilink/bot/get_qrcode_status", func(w http.ResponseWriter, r *http.Request) {
		s.handleQRStatus(w, r, redirectHost)
	})
	mux.HandleFunc("/qr/{id}", s.handleScan)
	for path, h := range map[string]botHandler{
		"getupdates": s.getUpdates, "sendmessage": s.sendMessage, "getuploadurl": s.getUploadURL,
		"getconfig": s.getConfig, "sendtyping": s.sendTyping,
		"msg/notifystart": s.notify(true), "msg/notifystop": s.notify(false),
	} {
		mux.HandleFunc("POST /ilink/bot/"+path, s.bot(h))
	}
	mux.HandleFunc("POST /c2c/upload", s.cdnUpload)
	mux.HandleFunc("GET /c2c/download", s.cdnDownload)
	mux.HandleFunc("POST /fake/inject", s.handleInject)
	mux.HandleFunc("GET /fake/sent", s.handleSent)
	return mux
}

// violate records a broken rule of the fact sheet (Violations lists them)
// and answers 400.
func (s *Server) violate(w http.ResponseWriter, r *http.Request, format string, args ...any) {
	msg := r.URL.Path + ": " + fmt.Sprintf(format, args...)
	s.mu.Lock()
	if len(s.violations) < 1000 {
		s.violations = append(s.violations, msg)
	}
	s.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// Violations returns every broken request rule seen so far (headers,
// base_info, body conventions). A correct client leaves it empty.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Requests returns the bot requests received so far (bounded to the last
// 10,000).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// checkCommon checks the headers every iLink request carries (§2). It
// reports false (and answers) when the request must stop here.
func (s *Server) checkCommon(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("iLink-App-Id") != "bot" {
		s.violate(w, r, "iLink-App-Id %q, want bot", r.Header.Get("iLink-App-Id"))
		return false
	}
	v := r.Header.Get("iLink-App-ClientVersion")
	var n uint32
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != v {
		s.violate(w, r, "iLink-App-ClientVersion %q is not a decimal uint32", v)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoAccount is returned for an unknown bot.
var errNoAccount = errors.New("wechattest: no such account")
