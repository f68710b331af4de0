package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/mcp"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Defaults of "xconn mcp".
const (
	defaultMCPUser = "mcp"
	// ownerMCP is the owner a data directory of "xconn mcp" records.
	ownerMCP = "xconn mcp"
	// envMCPToken holds the HTTP bearer token when --http-token-file is
	// not given.
	envMCPToken = "XCONN_MCP_TOKEN"
	// mcpHTTPShutdown bounds the graceful part of the HTTP server's stop.
	mcpHTTPShutdown = 2 * time.Second
)

type mcpFlags struct {
	conn             connectorFlags
	dataDir          string
	userID           string
	log              logFlags
	httpAddr         string
	tokenFile        string
	downloadOrigins  []string
	privateDownloads privateDownloadsFlag
}

func newMCPCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp BASE_URL...",
		Short: "Serve connectors to any MCP client (Claude Desktop, Cursor, an agent framework)",
		Long: `Run an embedded xAgent host against one or more Connector Servers and serve
it as a Model Context Protocol server: the tools of every signed-in channel,
connector_channels_list, connector_message_send, messages_read (the next
unread user messages; each is acknowledged to the connector only when read),
channel_sign_in / channel_sign_in_status / channel_sign_out, and each
channel's Descriptor and history as resources.

By default it speaks MCP on stdin/stdout, for the mcpServers entry of an MCP
client's config file; everything it logs goes to stderr. With --http ADDR it
serves streamable HTTP at http://ADDR/ instead, to clients that send
"Authorization: Bearer TOKEN"; the token (at least 16 bytes) comes from
--http-token-file or env XCONN_MCP_TOKEN, and without one it refuses to
start.

The API key applies to every BASE_URL. --auth-flow and --auth-input sign a
channel in at start (one BASE_URL, a form flow) unless one is signed in
already; otherwise the MCP client signs in with channel_sign_in. Ctrl-C or
SIGTERM stops it; so does the client closing stdin.`,
		Example: `  xconn mcp http://127.0.0.1:8080 --api-key-file key.txt --data ~/.xconn-mcp
  xconn mcp http://127.0.0.1:8080 --api-key-file key.txt --auth-flow telegram_bot_binding --auth-input-file bot.txt
  XCONN_MCP_TOKEN=... xconn mcp http://127.0.0.1:8080 --api-key-file key.txt --http 127.0.0.1:8765`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.conn.key()
			if err := f.privateDownloads.resolve(cmd); err != nil {
				return err
			}
			return runMCP(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func (f *mcpFlags) register(fs *pflag.FlagSet) {
	f.conn.register(fs, "auth flow of a form to sign a channel in with at start (one BASE_URL; default: none, the client signs in with channel_sign_in)")
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_MCP_DATA", defaultMCPDataDir()), "data directory of the host: SQLite database, key, received files; locked while it runs (env XCONN_MCP_DATA)")
	fs.StringVar(&f.userID, "user", defaultMCPUser, "user id the channels belong to")
	f.log.register(fs, false)
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio; needs a bearer token")
	fs.StringVar(&f.tokenFile, "http-token-file", "", "file holding the bearer token HTTP clients must send (its first line, at least 16 bytes, mode 0600; default: env "+envMCPToken+")")
	fs.StringArrayVar(&f.downloadOrigins, "download-origin", nil, `restrict the origins (scheme://host[:port]) the host downloads a connector's download_url from to these and the connector's own (repeatable; default and "*": any origin, public addresses only)`)
	f.privateDownloads.register(fs)
}

// defaultMCPDataDir is a per-user directory: an MCP client starts the
// command in a working directory of its own choosing.
func defaultMCPDataDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "xconn", "mcp")
	}
	return "./xconn-mcp-data"
}

// httpToken returns the bearer token of --http: the first line of
// --http-token-file, else env XCONN_MCP_TOKEN. A missing or short one is
// a usage error that never quotes it.
func (f *mcpFlags) httpToken() (string, error) {
	if f.httpAddr == "" {
		if f.tokenFile != "" {
			return "", usageError(errors.New("--http-token-file is for --http"))
		}
		return "", nil
	}
	token, from := os.Getenv(envMCPToken), "env "+envMCPToken
	if f.tokenFile != "" {
		t, err := readSecretFile(f.tokenFile)
		if err != nil {
			return "", usageError(fmt.Errorf("--http-token-file: %w", err))
		}
		if err := checkSecretFileMode(f.tokenFile); err != nil {
			return "", usageError(fmt.Errorf("--http-token-file: %w", err))
		}
		token, from = strings.TrimSpace(t), f.tokenFile
	}
	switch {
	case token == "":
		return "", usageError(fmt.Errorf("--http needs a bearer token: put one in a file for --http-token-file or in env %s", envMCPToken))
	case len(token) < mcp.MinTokenBytes:
		return "", usageError(fmt.Errorf("the bearer token of %s is %d bytes: use at least %d", from, len(token), mcp.MinTokenBytes))
	}
	return token, nil
}

func runMCP(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, baseURLs []string, f mcpFlags) error {
	inputs, err := f.conn.authInputs()
	if err != nil {
		return err
	}
	signIn := f.conn.flowID != "" || len(inputs) > 0
	if signIn && len(baseURLs) != 1 {
		return usageError(errors.New("--auth-flow and --auth-input sign in at one connector: give one BASE_URL"))
	}
	token, err := f.httpToken()
	if err != nil {
		return err
	}
	if err := checkDownloadOrigins(f.downloadOrigins); err != nil {
		return err
	}
	// stdout is the protocol in stdio mode: every log line goes to stderr.
	pretty, level, err := f.log.resolve(stderr)
	if err != nil {
		return err
	}
	apiKey := f.conn.apiKey
	secrets := connector.NewRedactor(0)
	secrets.Add(apiKey)
	secrets.Add(token)
	for _, v := range inputs {
		secrets.Add(v)
	}
	for _, u := range baseURLs {
		if err := connectorPreflight(ctx, u, apiKey, f.conn.flowID, secrets.Scrub); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	out := &lineWriter{w: stderr}
	logger := newLogger(pretty, level, &out.mu, stderr, stderr, secrets)
	out.log = logger

	cleanup, admitted := newDataDirCleanup(f.dataDir), false
	defer func() {
		if !admitted {
			_ = cleanup.undo()
		}
	}()
	lock, err := lockDataDir(f.dataDir, ownerMCP)
	if err != nil {
		return err
	}
	defer lock.Close()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(f.dataDir, hostDBFile), store.Options{DataDir: f.dataDir})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("open store: %w", err)}
	}
	defer db.Close()

	inbox := mcp.NewInbox(mcp.InboxOptions{})
	var srv atomic.Pointer[mcp.Server]
	h, err := host.New(host.Options{
		Store: db, Delivery: db, Agent: inbox, Logger: logger,
		FilesDir: filepath.Join(f.dataDir, "files"),
		OnEvent: func(ev host.Event) {
			logger.Info(eventLine(ev))
			if s := srv.Load(); s != nil {
				s.Changed()
			}
		},
		OnSecret:              secrets.Add,
		DownloadOrigins:       f.downloadOrigins,
		AllowPrivateDownloads: f.privateDownloads.allow,
	})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if err := h.Start(ctx); err != nil {
		return &exitError{code: 1, err: err}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = h.Close(cctx)
	}()
	var conns []*host.Connector
	for _, u := range baseURLs {
		c, err := h.Admit(ctx, u, apiKey)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ae *host.AdmissionError
			if errors.As(err, &ae) {
				return &exitError{code: 1, err: errors.New(secrets.Scrub(ae.Error()))}
			}
			return &exitError{code: 1, err: fmt.Errorf("admit %s: %s", u, secrets.Scrub(err.Error()))}
		}
		admitted = true
		conns = append(conns, c)
		logger.Info(fmt.Sprintf("admitted %s (%s %s, protocol %s)", c.CardID, c.Card.Connector.Name, c.Card.Connector.Version, c.Card.ProtocolVersion))
	}
	if signIn {
		if err := mcpSignIn(ctx, h, conns[0], f, inputs, out, secrets); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return &exitError{code: 1, err: errors.New(secrets.Scrub(err.Error()))}
		}
	}

	s, err := mcp.New(ctx, mcp.Options{Host: h, Inbox: inbox, UserID: f.userID, Name: "xconn",
		Version: connector.BuildInfo().Version, Logger: logger})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	srv.Store(s)
	s.Changed() // what happened between Admit and now
	defer s.Close()

	if f.httpAddr != "" {
		return serveMCPHTTP(ctx, s, f.httpAddr, token, logger)
	}
	logger.Info("serving MCP on stdin/stdout")
	err = s.Run(ctx, s.StdioTransport(stdin, stdout))
	switch {
	case err == nil, ctx.Err() != nil, errors.Is(err, io.EOF):
		logger.Info("MCP session ended")
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("MCP session: %s", secrets.Scrub(err.Error()))}
}

// mcpSignIn signs a channel of c in with the form of --auth-flow and
// --auth-input, unless the user has a signed-in channel of c already. It
// never prompts: stdin may be the protocol.
func mcpSignIn(ctx context.Context, h *host.Host, c *host.Connector, f mcpFlags, inputs map[string]string, out *lineWriter, secrets *connector.Redactor) error {
	ucs, err := h.Channels(ctx, f.userID, c.CardID)
	if err != nil {
		return err
	}
	for _, uc := range ucs {
		if uc.Authenticated {
			out.printf("reusing stored channel %s (connector_channel_id %s)", uc.ID, uc.ChannelID)
			return nil
		}
	}
	flowID := f.conn.flowID
	if flowID == "" && len(c.Card.AuthFlows) > 0 {
		flowID = c.Card.AuthFlows[0].ID
	}
	flow, ok := c.Card.AuthFlow(flowID)
	if !ok {
		return fmt.Errorf("sign-in: unknown --auth-flow %q: the Card of %s has %s", flowID, c.CardID, flowList(c.Card))
	}
	if flow.Type != protocol.AuthFlowForm {
		return fmt.Errorf("sign-in: %s is a %s flow: sign in from the MCP client with channel_sign_in (it shows the QR code)", flowID, flow.Type)
	}
	var sg *host.Signin
	if len(ucs) > 0 {
		out.printf("signing stored channel %s in again with flow %q", ucs[0].ID, flowID)
		sg, err = h.Reauthenticate(ctx, ucs[0].ID, flowID, inputs)
	} else {
		out.printf("signing in with flow %q", flowID)
		sg, err = h.Connect(ctx, f.userID, c.CardID, flowID, inputs)
	}
	if err != nil {
		return fmt.Errorf("sign-in: %w", err)
	}
	uc, err := waitSignin(ctx, sg, out)
	if err != nil {
		return err
	}
	out.printf("signed in channel %s (connector_channel_id %s)", uc.ID, uc.ChannelID)
	return nil
}

// serveMCPHTTP serves streamable HTTP on addr until ctx ends.
func serveMCPHTTP(ctx context.Context, s *mcp.Server, addr, token string, logger *slog.Logger) error {
	handler, err := s.HTTPHandler(token)
	if err != nil {
		return usageError(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("--http %s: %w", addr, err)}
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info(fmt.Sprintf("serving MCP over streamable HTTP at http://%s/ (Authorization: Bearer required)", ln.Addr()))
	select {
	case <-ctx.Done():
	case err := <-served:
		return &exitError{code: 1, err: fmt.Errorf("--http %s: %w", addr, err)}
	}
	logger.Info("stopping")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mcpHTTPShutdown)
	defer cancel()
	if hs.Shutdown(sctx) != nil {
		_ = hs.Close() // event streams never go idle
	}
	<-served
	return nil
}
