package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Timeouts of the http.Server that ListenAndServe runs. There is no
// server-wide write timeout: the data plane is a long-lived WebSocket,
// downloads may be large and a connector's own routes may stream; instead
// each SDK endpoint sets its own write deadline (ServeWriteTimeout, or
// ServeDownloadTimeout for /files/refs), and wsconn bounds each frame
// write.
const (
	ServeReadHeaderTimeout = 10 * time.Second
	// ServeWriteTimeout bounds writing the answer of /health,
	// /connector-card.json, /skill.md, /metrics and (after its body is
	// read) /files/uploads.
	ServeWriteTimeout = 30 * time.Second
	// ServeDownloadTimeout bounds writing one /files/refs download.
	ServeDownloadTimeout = 10 * time.Minute
	// ServeReadTimeout bounds reading one request with its body (uploads
	// of Options.MaxUploadBytes included); a WebSocket clears it after
	// the handshake.
	ServeReadTimeout = 5 * time.Minute
	// ServeIdleTimeout closes idle keep-alive connections.
	ServeIdleTimeout = 2 * time.Minute
	// ServeMaxHeaderBytes bounds request headers.
	ServeMaxHeaderBytes = 64 << 10
)

// ListenAndServe runs the connector until ctx ends or the process gets
// SIGINT or SIGTERM: it listens on addr ("127.0.0.1:8080"; a port of 0
// picks one) and runs Serve with a context that the first signal ends. It
// returns nil after a signal or ctx's end, and the error otherwise.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("connector: listen: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return s.Serve(ctx, ln)
}

// NewHTTPServer returns an http.Server for h with the Serve* timeouts, at
// most DefaultMaxConns open connections (see Options.MaxConns) and an error
// log on logger (nil discards), for a program that serves a connector's
// handlers on listeners of its own (for example a public listener for a web
// side).
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return newHTTPServer(h, logger, DefaultMaxConns)
}

func newHTTPServer(h http.Handler, logger *slog.Logger, maxConns int) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ServeReadHeaderTimeout,
		ReadTimeout:       ServeReadTimeout,
		IdleTimeout:       ServeIdleTimeout,
		MaxHeaderBytes:    ServeMaxHeaderBytes,
		ConnState:         newConnLimiter(maxConns).state,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Serve runs the connector on ln (which it closes) until ctx ends: it
// starts the server if Start has not run (opening the default store when
// Options.Store is nil), serves every endpoint and the routes added with
// Handle through NewHTTPServer, and on the way out closes in order: the
// connector's OnClose hooks and shared consumers, the data-plane sockets,
// clients and store (Close), then the listener (Shutdown, bounded by
// Options.CloseTimeout). Serve does not catch signals (ListenAndServe
// does), so an embedding program keeps its own shutdown order. Without
// Options.APIKey it serves only on a loopback address. It returns nil when
// ctx ends, and the error otherwise.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.APIKey == "" && !isLoopback(ln.Addr()) {
		ln.Close()
		return fmt.Errorf("connector: no system API key: serving on %s without one is allowed only on a loopback address", ln.Addr())
	}
	s.mu.Lock()
	started := s.state != stateNew
	s.mu.Unlock()
	if !started {
		if err := s.Start(ctx); err != nil {
			ln.Close()
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return err
		}
	}
	s.noteServeAddr(ln.Addr().String())
	hs := newHTTPServer(s, s.log, s.opts.MaxConns)
	hs.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	s.log.Info("connector: serving", "addr", ln.Addr().String())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		served = nil
	}
	cctx, cancel := context.WithTimeout(context.Background(), s.opts.CloseTimeout)
	defer cancel()
	errs := []error{s.Close(cctx)}
	if err := hs.Shutdown(cctx); err != nil {
		errs = append(errs, err, hs.Close())
	}
	if served != nil {
		serveErr = <-served
	}
	if !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	return errors.Join(errs...)
}

// isLoopback reports whether a listener address is on a loopback IP.
func isLoopback(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
