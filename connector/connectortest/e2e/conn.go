package e2e

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
)

// Env is what the connector under test is built with. The kit makes one
// for each start, in the test's process ([Start]) or in the child process
// of the crash test; a [NewFunc] turns it into a served connector.
type Env struct {
	// SDK has DataDir, APIKey and Logger set; the connector puts it in its
	// own options (adding what else it needs, such as PublicURL or
	// SigningKey).
	SDK connector.Options
	// Fake is where the connector reaches its fake target ([Fake].Addr):
	// a Base URL or a host:port, "" when the target needs none.
	Fake string
	// URL is the connector's own Base URL (http://127.0.0.1:PORT), known
	// before it is built, for a connector that must know its public URL.
	URL string
}

// Server is a built connector, ready to serve on a listener until ctx ends
// (returning nil then) and closing it: *connector.Server is one.
type Server interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// ServeFunc adapts a function to [Server], for a connector whose serving
// is one call (a command's run function, say).
type ServeFunc func(ctx context.Context, ln net.Listener) error

// Serve calls f.
func (f ServeFunc) Serve(ctx context.Context, ln net.Listener) error { return f(ctx, ln) }

// NewFunc builds the connector under test for env, without serving it.
// The crash test calls it in a child process, so it must depend on
// nothing but env and constants: no value computed by the test.
type NewFunc func(env Env) (Server, error)

// Config says how [Start] runs a connector.
type Config struct {
	// APIKey is the system API key (required unless the connector needs
	// none); it is one of the secrets Stop looks for.
	APIKey string
	// DataDir is the connector's data directory; "" makes a fresh one.
	// Start again on the same DataDir to restart a connector.
	DataDir string
	// Addr is the address to listen on; "" picks a loopback port.
	Addr string
	// Fake is Env.Fake.
	Fake string
	// Secrets are checked, besides APIKey, in every log line when the
	// connector stops.
	Secrets Secrets
}

// Conn is a connector under test served in the test's process on a
// loopback listener. Make it with [Start]; it stops when the test ends,
// or earlier with Stop. Its fields do not change after Start, except
// across Restart (URL and Addr stay the same).
type Conn struct {
	// URL is the connector's Base URL; Addr its host:port.
	URL, Addr string
	// DataDir is the connector's data directory.
	DataDir string
	// APIKey is the system API key it requires.
	APIKey string
	// Logs holds every line the connector logged, across restarts.
	Logs *Logs

	tb      testing.TB
	cfg     Config
	newConn NewFunc
	cancel  context.CancelFunc
	done    chan error // Serve's result; nil once stopped
}

// Start builds the connector with newConn and serves it on cfg.Addr (a
// loopback port by default) until the test ends or Stop is called. A build
// or listen error fails tb at once.
func Start(tb testing.TB, cfg Config, newConn NewFunc) *Conn {
	tb.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		tb.Fatalf("e2e: listen: %v", err)
	}
	return startOn(tb, cfg, newConn, ln)
}

// startOn is Start on a listener the caller made.
func startOn(tb testing.TB, cfg Config, newConn NewFunc, ln net.Listener) *Conn {
	tb.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	cfg.Addr = ln.Addr().String()
	c := &Conn{URL: "http://" + cfg.Addr, Addr: cfg.Addr, DataDir: cfg.DataDir, APIKey: cfg.APIKey, Logs: &Logs{},
		tb: tb, cfg: cfg, newConn: newConn}
	c.serve(ln)
	tb.Cleanup(c.Stop)
	return c
}

// serve builds the connector and serves it on ln.
func (c *Conn) serve(ln net.Listener) {
	c.tb.Helper()
	srv, err := c.newConn(Env{SDK: connector.Options{DataDir: c.DataDir, APIKey: c.APIKey, Logger: c.Logs.Logger()},
		Fake: c.cfg.Fake, URL: c.URL})
	if err != nil {
		ln.Close()
		c.tb.Fatalf("e2e: build the connector: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c.cancel, c.done = cancel, done
}

// Stop ends Serve and waits for it (at most Wait). It fails the test when
// Serve returned an error or did not return, or when a secret (the API key
// or Config.Secrets) is in the connector's logs. Calling it again is
// harmless.
func (c *Conn) Stop() {
	c.tb.Helper()
	if c.done == nil {
		return
	}
	c.cancel()
	select {
	case err := <-c.done:
		if err != nil {
			c.tb.Errorf("e2e: the connector's Serve returned %v, want nil", err)
		}
	case <-time.After(Wait):
		c.tb.Errorf("e2e: the connector's Serve did not return within %v of its context's end", Wait)
	}
	c.done = nil
	c.cfg.Secrets.With(c.APIKey).Check(c.tb, "the connector's logs", c.Logs.String())
	if c.tb.Failed() {
		c.tb.Logf("the connector logged:\n%s", c.Logs.String())
	}
}

// Restart stops the connector and starts it again, built anew, on the same
// data directory and address.
func (c *Conn) Restart() {
	c.tb.Helper()
	c.Stop()
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		c.tb.Fatalf("e2e: listen again on %s: %v", c.Addr, err)
	}
	c.serve(ln)
}

// Dial connects a host-side [Client] to the connector (Card, WebSocket
// with the API key, hello), closed when tb ends.
func (c *Conn) Dial(tb testing.TB) *Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	defer cancel()
	cl, _, err := connectortest.Connect(ctx, c.URL, c.APIKey)
	if err != nil {
		tb.Fatalf("e2e: connect to the connector: %v", err)
	}
	tb.Cleanup(func() { _ = cl.Close() })
	return &Client{Client: cl, tb: tb}
}

// Connector is what connectors built on package connector have: the SDK
// server they serve.
type Connector interface {
	Server() *connector.Server
}

// Build is the usual [NewFunc]: options(env) makes the connector's options
// (env.SDK in its SDK field, the fake's address in its target fields),
// each mod adjusts them (a nil mod is skipped), and newConn builds the
// connector, whose Server is served.
//
//	e2e.Build(telegram.New, func(env e2e.Env) telegram.Options {
//		return telegram.Options{SDK: env.SDK, APIURL: env.Fake}
//	})
func Build[O any, C Connector](newConn func(O) (C, error), options func(Env) O, mods ...func(*O)) NewFunc {
	return func(env Env) (Server, error) {
		o := options(env)
		for _, mod := range mods {
			if mod != nil {
				mod(&o)
			}
		}
		c, err := newConn(o)
		if err != nil {
			return nil, err
		}
		return c.Server(), nil
	}
}
