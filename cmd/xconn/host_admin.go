package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/host/admin"
	"github.com/xconn/xconn/internal/buildinfo"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// adminFlags are the operator page flags of "xconn host":
//
//	--admin ADDR              serve the operator page (host/admin) on ADDR
//	--admin-token-file FILE   its bearer token: the file's first line, at
//	                          least 16 characters, the file mode 0600
//
// Both come from the environment too (XCONN_ADMIN, XCONN_ADMIN_TOKEN_FILE).
// The page is off without --admin; --admin without a token file is refused.
type adminFlags struct {
	addr      string
	tokenFile string
	token     string      // read by check
	hooks     *adminHooks // set by runHost: the page's hooks into the host
}

func (f *adminFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "admin", os.Getenv("XCONN_ADMIN"), "serve the operator page (channels, sign-in QR codes, queues, connector health, recent errors; live) on this address, e.g. 127.0.0.1:9090 (env XCONN_ADMIN)")
	fs.StringVar(&f.tokenFile, "admin-token-file", os.Getenv("XCONN_ADMIN_TOKEN_FILE"), "file whose first line is the operator page's token (at least 16 characters, mode 0600); sent as Authorization: Bearer or typed into the page's login form (env XCONN_ADMIN_TOKEN_FILE)")
}

// check reads the token when the page is on; its errors name the file,
// never the token.
func (f *adminFlags) check() error {
	if f.addr == "" {
		if f.tokenFile != "" {
			return &exitError{code: 2, err: errors.New("--admin-token-file needs --admin ADDR")}
		}
		return nil
	}
	if f.tokenFile == "" {
		return &exitError{code: 2, err: errors.New("--admin needs --admin-token-file FILE (the operator page is never served without a token)")}
	}
	if err := checkSecretFileMode(f.tokenFile); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--admin-token-file: %w", err)}
	}
	tok, err := readSecretFile(f.tokenFile)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("--admin-token-file: %w", err)}
	}
	if len(tok) < admin.MinTokenLen {
		return &exitError{code: 2, err: fmt.Errorf("--admin-token-file: the token in %s has %d characters, at least %d are required", f.tokenFile, len(tok), admin.MinTokenLen)}
	}
	f.token = tok
	return nil
}

// adminHooks passes the host's events and packets to the operator page
// once it exists (the host is built first, its hooks with it). A nil
// *adminHooks does nothing.
type adminHooks struct{ page atomic.Pointer[admin.Admin] }

func (a *adminHooks) event(ev host.Event) {
	if a == nil {
		return
	}
	if p := a.page.Load(); p != nil {
		p.OnEvent(ev)
	}
}

func (a *adminHooks) packet(dir protocol.Direction, cardID string, env *protocol.Envelope) {
	if a == nil {
		return
	}
	if p := a.page.Load(); p != nil {
		p.OnPacket(dir, cardID, env)
	}
}

// track shows a sign-in on the page (nil-safe: no page, nothing).
func (a *adminHooks) track(s *host.Signin) {
	if a == nil {
		return
	}
	if p := a.page.Load(); p != nil {
		p.TrackSignin(s)
	}
}

// serve starts the operator page of h when --admin is set, and returns
// the function that stops it and waits for it. Listening fails at once.
func (f *adminFlags) serve(ctx context.Context, h *host.Host, secrets *connector.Redactor, log *slog.Logger, out *lineWriter) (stop func(), err error) {
	if f.addr == "" {
		return func() {}, nil
	}
	secrets.Add(f.token)
	page, err := admin.New(admin.Options{Host: h, Token: f.token, Version: buildinfo.Get().Version, Redact: secrets.Scrub, Logger: log})
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("--admin: %w", err)}
	}
	f.hooks.page.Store(page)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := page.Serve(sctx, ln); err != nil {
			log.Error("admin: operator page stopped", "err", err)
		}
	})
	out.printf("operator page at http://%s/ (token from %s)", ln.Addr(), f.tokenFile)
	return func() { cancel(); wg.Wait() }, nil
}

// hostTracing builds the host's OpenTelemetry provider from the OTEL_*
// environment (see internal/xtrace.FromEnv: off unless
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set). The caller shuts it down at exit, flushing the spans batched.
func hostTracing(ctx context.Context) (*xtrace.Provider, error) {
	p, err := xtrace.FromEnv(ctx, "xconn-host", buildinfo.Get().Version, os.Getenv)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return p, nil
}
