package xagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/xconn/xconn/conformance"
)

// Check serves the scripted Connector on ln until the script ends or ctx
// ends (an interrupted run still reports what it observed), then closes
// ln and returns the report. It fails only when the run cannot start.
func Check(ctx context.Context, ln net.Listener, opts Options) (*conformance.Report, error) {
	s, err := NewServer(opts)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	_ = s.Wait(ctx)
	rep := s.Report()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.Close() // ends the WebSocket handlers, which Shutdown does not wait for
	_ = hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return rep, fmt.Errorf("xagent: serve: %w", err)
	}
	return rep, nil
}
