package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Defaults of "xconn host".
const (
	defaultHostDataDir = "./xconn-host-data"
	defaultHostUser    = "cli"
)

type hostFlags struct {
	conn    connectorFlags // --api-key(-file), --auth-flow, --auth-input(-file)
	dataDir string
	agent   agentFlags
	userID  string
	log     logFlags
	invoke  invokeFlags
	// downloadOrigins are host.Options.DownloadOrigins.
	downloadOrigins  []string
	privateDownloads privateDownloadsFlag
	health           healthFlags // serve_health.go
	admin            adminFlags  // --admin, --admin-token-file (host_admin.go)
}

func newHostCmd() *cobra.Command {
	var f hostFlags
	cmd := &cobra.Command{
		Use:   "host BASE_URL",
		Short: "Run an embedded xAgent host against a connector",
		Long: `Run the xAgent side against a Connector Server, for connector authors who
want to try their connector against a real host. It admits the connector
(printing the refusal reason and exiting 1 if refused), opens a channel
(reusing the stored one on a restart), signs in (form input from
--auth-input, prompting for missing fields when a terminal is attached; a QR
code is shown in the terminal), then serves the channel with the agent until
interrupted, reconnecting as the host does. It prints which agent answers
(for a model: its name and server, checked at start unless --no-preflight)
and, when the connector names one, the page users chat on. Every data-plane
packet is logged as one line (types and identifiers, never payload secrets),
except the auth.status polls of a sign-in: one line per sign-in state change
instead. Ctrl-C or SIGTERM stops at once, a pending sign-in included.

With --invoke TOOL [--args JSON] it runs one tool call on the signed-in
channel instead (for tools-only connectors such as a device; the built-in
connector_channels_list works too), prints the ack as JSON on stdout
({"tool_id", "connector_channel_id", "result", "files"} or {"error": {"code",
"message", "retryable"}}; files the result returned are downloaded into the
data directory) and exits: 0 on success, 1 on a tool error, 2 on a usage
error such as --args that is not a JSON object. The packet log then goes to
stderr.`,
		Example: `  xconn host http://127.0.0.1:8080 --api-key-file key.txt --auth-flow webchat_room --auth-input room=lobby
  xconn host http://127.0.0.1:8080 --api-key-file key.txt --invoke webchat_message_send --args '{"connector_channel_id":"x","text":"hi"}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.conn.key()
			if err := f.privateDownloads.resolve(cmd); err != nil {
				return err
			}
			return runHost(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// register adds the flags of "xconn host" to fs: the connector flags, the
// agent's, the log's, and the host's own.
func (f *hostFlags) register(fs *pflag.FlagSet) {
	f.conn.register(fs, "auth flow id of the Card to sign in with (default: its first flow)")
	fs.StringVar(&f.dataDir, "data", envOr("XCONN_HOST_DATA", defaultHostDataDir), "data directory of the host: SQLite database, key, received files; the host's own, locked while it runs (env XCONN_HOST_DATA)")
	f.agent.register(fs, `agent that answers user messages: "echo", or "openai" (any OpenAI-compatible server, with --model and --base-url)`)
	fs.StringVar(&f.userID, "user", defaultHostUser, "user id the channel belongs to")
	f.log.register(fs, false)
	f.invoke.register(fs)
	fs.StringArrayVar(&f.downloadOrigins, "download-origin", nil, `restrict the origins (scheme://host[:port]) the host downloads a connector's download_url from to these and the connector's own (repeatable; default and "*": any origin, public addresses only)`)
	f.privateDownloads.register(fs)
	f.health.register(fs)
	f.admin.register(fs)
}

func runHost(ctx context.Context, stdout, stderr io.Writer, baseURL string, f hostFlags) error {
	inputs, err := f.conn.authInputs()
	if err != nil {
		return err
	}
	if err := f.agent.check(); err != nil {
		return err
	}
	invokeArgs, err := f.invoke.check()
	if err != nil {
		return err
	}
	if err := checkDownloadOrigins(f.downloadOrigins); err != nil {
		return err
	}
	if err := f.admin.check(); err != nil {
		return err
	}
	f.admin.hooks = &adminHooks{}
	tracing, err := hostTracing(ctx) // OTEL_* (host_admin.go)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}()
	f.agent.tracerProvider = tracing
	lineOut := stdout
	if f.invoke.tool != "" {
		lineOut = stderr // stdout is the call's JSON
	}
	pretty, level, err := f.log.resolve(lineOut)
	if err != nil {
		return err
	}
	apiKey := f.conn.apiKey
	// The flags are sound: now the caller's own mistakes, each in one
	// sentence, before anything is opened or written.
	if err := connectorPreflight(ctx, baseURL, apiKey, f.conn.flowID, func(s string) string {
		if apiKey == "" {
			return s
		}
		return strings.ReplaceAll(s, apiKey, "[redacted]")
	}); err != nil {
		if ctx.Err() != nil {
			return nil // Ctrl-C stops at once, here too
		}
		return err
	}
	secrets := connector.NewRedactor(0)
	secrets.Add(apiKey)
	for _, v := range inputs {
		secrets.Add(v)
	}
	// One style per process: the readable packet view with warnings in
	// its shape, or structured records (packets included) on stderr.
	out := &lineWriter{w: lineOut}
	logger := newLogger(pretty, level, &out.mu, lineOut, stderr, secrets)
	if !pretty {
		out.log = logger
	}
	// Until a connector is admitted, the run leaves the data directory as
	// it found it (deferred first: it runs after the store is closed).
	cleanup, admitted := newDataDirCleanup(f.dataDir), false
	defer func() {
		if !admitted {
			_ = cleanup.undo()
		}
	}()
	lock, err := lockDataDir(f.dataDir, ownerHost) // one process per --data
	if err != nil {
		return err
	}
	defer lock.Close()
	hs, err := startHealth(f.health.addr, logger)
	if err != nil {
		return err
	}
	defer hs.Close()
	defer context.AfterFunc(ctx, hs.stopping)()
	var agent host.Agent = invokeAgent{}
	if f.invoke.tool == "" {
		if agent, err = f.agent.build(logger, secrets); err != nil {
			return err
		}
		out.printf("%s", f.agent.describe())
		if err := f.agent.preflight(ctx, agent, logger); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(f.dataDir, hostDBFile), store.Options{DataDir: f.dataDir})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("open store: %w", err)}
	}
	defer db.Close()
	hostStarting(hs, db)

	h, err := host.New(host.Options{
		Store: db, Delivery: db, Agent: agent, Logger: logger,
		FilesDir: filepath.Join(f.dataDir, "files"),
		OnPacket: func(dir protocol.Direction, cardID string, env *protocol.Envelope) {
			f.admin.hooks.packet(dir, cardID, env)
			if line, ok := hostPacketLine(dir, env); ok {
				out.printf("%s", line)
			}
		},
		OnEvent: func(ev host.Event) {
			f.admin.hooks.event(ev)
			out.printf("%s", eventLine(ev))
		},
		OnSecret:       secrets.Add,
		TracerProvider: tracing,

		DownloadOrigins:       f.downloadOrigins,
		AllowPrivateDownloads: f.privateDownloads.allow,
	})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	bindAgent(agent, h, db)
	if err := h.Start(ctx); err != nil {
		return &exitError{code: 1, err: err}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = h.Close(cctx)
	}()
	stopAdmin, err := f.admin.serve(ctx, h, secrets, logger, out)
	if err != nil {
		return err
	}
	defer stopAdmin()

	c, err := h.Admit(ctx, baseURL, apiKey)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		var ae *host.AdmissionError
		if errors.As(err, &ae) {
			return &exitError{code: 1, err: fmt.Errorf("%s", secrets.Scrub(ae.Error()))}
		}
		return &exitError{code: 1, err: fmt.Errorf("admit: %s", secrets.Scrub(err.Error()))}
	}
	admitted = true
	out.printf("admitted %s (%s %s, protocol %s, profiles %s)", c.CardID, c.Card.Connector.Name, c.Card.Connector.Version,
		c.Card.ProtocolVersion, strings.Join(c.Profiles, ","))

	uc, err := ensureChannel(ctx, h, c, f, inputs, out, secrets)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return &exitError{code: 1, err: errors.New(secrets.Scrub(err.Error()))}
	}
	if f.invoke.tool != "" {
		return runInvoke(ctx, h, uc, f.invoke, invokeArgs, stdout, secrets.Scrub)
	}
	out.printf("serving channel %s (connector_channel_id %s) with the %s agent; Ctrl-C to stop", uc.ID, uc.ChannelID, f.agent.name)
	if u := chatPageOf(uc); u != "" {
		out.printf("users chat at %s", u)
	}
	hostServing(hs, h, c.CardID)
	<-ctx.Done()
	out.printf("stopping")
	return nil
}

// chatPageOf returns the page a user opens to chat on the channel, when
// the connector names one: a Descriptor account hint that is an absolute
// http(s) URL (the web chat's rooms). "" otherwise.
func chatPageOf(uc store.UserChannel) string {
	var d struct {
		Target struct {
			AccountHint string `json:"account_hint"`
		} `json:"target"`
	}
	if json.Unmarshal(uc.Descriptor, &d) != nil {
		return ""
	}
	u, err := url.Parse(d.Target.AccountHint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}

// ensureChannel reuses the user's authenticated channel, signs a stored
// one in again, or signs in anew.
func ensureChannel(ctx context.Context, h *host.Host, c *host.Connector, f hostFlags, inputs map[string]string, out *lineWriter, secrets *connector.Redactor) (store.UserChannel, error) {
	ucs, err := h.Channels(ctx, f.userID, c.CardID)
	if err != nil {
		return store.UserChannel{}, err
	}
	for _, uc := range ucs {
		if uc.Authenticated {
			out.printf("reusing stored channel %s", uc.ID)
			return uc, nil
		}
	}
	flowID := f.conn.flowID
	if flowID == "" && len(c.Card.AuthFlows) > 0 {
		flowID = c.Card.AuthFlows[0].ID
	}
	if flow, ok := c.Card.AuthFlow(flowID); ok && flow.Type == protocol.AuthFlowForm {
		if err := promptMissing(flow, inputs, out); err != nil {
			return store.UserChannel{}, err
		}
		for _, v := range inputs {
			secrets.Add(v)
		}
	} else if flowID != "" && !ok {
		return store.UserChannel{}, fmt.Errorf("sign-in: unknown --auth-flow %q: the Card of %s has %s", flowID, c.CardID, flowList(c.Card))
	}
	var s *host.Signin
	if len(ucs) > 0 {
		out.printf("signing stored channel %s in again with flow %q", ucs[0].ID, flowID)
		s, err = h.Reauthenticate(ctx, ucs[0].ID, flowID, inputs)
	} else {
		out.printf("signing in with flow %q", flowID)
		s, err = h.Connect(ctx, f.userID, c.CardID, flowID, inputs)
	}
	if err != nil {
		// The host's error names the step (data plane, channel.open,
		// auth.start); "sign-in" is said here, once.
		return store.UserChannel{}, fmt.Errorf("sign-in: %w", err)
	}
	f.admin.hooks.track(s)
	return waitSignin(ctx, s, out)
}

// promptMissing asks for the form fields missing from inputs when stdin is
// a terminal (secret fields without echo); otherwise it leaves them out.
func promptMissing(flow *protocol.AuthFlow, inputs map[string]string, out *lineWriter) error {
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil
	}
	reader := bufio.NewReader(os.Stdin)
	for _, fld := range flow.Fields {
		if _, ok := inputs[fld.Name]; ok {
			continue
		}
		label := fld.Label
		if label == "" {
			label = fld.Name
		}
		if !fld.Required {
			label += " (optional)"
		}
		out.prompt(label + ": ")
		var v string
		if fld.IsSecret() {
			b, err := term.ReadPassword(fd)
			out.prompt("\n")
			if err != nil {
				return fmt.Errorf("read %s: %w", fld.Name, err)
			}
			v = string(b)
		} else {
			line, err := reader.ReadString('\n')
			if err != nil && line == "" {
				return fmt.Errorf("read %s: %w", fld.Name, err)
			}
			v = strings.TrimRight(line, "\r\n")
		}
		if v != "" || fld.Required {
			inputs[fld.Name] = v
		}
	}
	return nil
}

// lineWriter serialises output lines from the host's goroutines.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	log *slog.Logger // structured style: each line is an info record here
}

func (l *lineWriter) printf(format string, args ...any) {
	if l.log != nil {
		l.log.Info(fmt.Sprintf(format, args...))
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (l *lineWriter) prompt(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprint(l.w, s)
}

// packetLine renders a packet as one readable line: direction, type,
// identifiers and a few payload fields that are never secret.
func packetLine(dir protocol.Direction, env *protocol.Envelope) string {
	arrow := "<-"
	if dir == protocol.ToConnector {
		arrow = "->"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", arrow, env.Type)
	if env.ConnectorChannelID != "" {
		fmt.Fprintf(&b, " ch=%s", env.ConnectorChannelID)
	}
	if env.RequestID != "" {
		fmt.Fprintf(&b, " req=%s", env.RequestID)
	}
	if env.Error != nil {
		fmt.Fprintf(&b, " error=%s", env.Error.Code)
	}
	for _, kv := range packetFields(env) {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	return b.String()
}

func packetFields(env *protocol.Envelope) [][2]string {
	switch env.Type {
	case protocol.TypeHello:
		var p protocol.HelloPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"card", p.ConnectorCardID}, {"connector_id", p.ConnectorID}, {"version", p.ProtocolVersion}, {"profiles", strings.Join(p.SupportedProfiles, ",")}}
	case protocol.TypeHelloAck:
		var p protocol.HelloAckPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"connector_id", p.ConnectorID}, {"version", p.ProtocolVersion}}
	case protocol.TypeAuthStart:
		var p protocol.AuthStartPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"flow", p.FlowID}, {"fields", fmt.Sprint(len(p.Input))}} // input values are never printed
	case protocol.TypeAuthStartAck, protocol.TypeAuthStatusAck:
		var p protocol.AuthStatePayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"status", p.Status}, {"auth_session", p.AuthSessionID}}
	case protocol.TypeChannelOpenAck, protocol.TypeDescriptorGetAck, protocol.TypeDescriptorPush:
		var p struct {
			D *protocol.Descriptor `json:"connection_descriptor"`
		}
		_ = env.DecodePayload(&p)
		if p.D != nil {
			return [][2]string{{"status", p.D.Connection.Status}, {"profiles", strings.Join(p.D.Connection.Profiles, ",")}}
		}
	case protocol.TypeToolInvoke, protocol.TypeToolInvokeAck, protocol.TypeToolProgressPush:
		var p struct {
			ToolID string `json:"tool_id"`
			Status string `json:"status"`
		}
		_ = env.DecodePayload(&p)
		return [][2]string{{"tool", p.ToolID}, {"status", p.Status}}
	case protocol.TypeChatMessage:
		var p protocol.ChatMessagePayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"message_id", p.MessageID}, {"text_bytes", fmt.Sprint(len(p.Text))}, {"files", fmt.Sprint(len(p.Files))}}
	case protocol.TypeChatMessageDelta:
		var p protocol.ChatDeltaPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"message_id", p.MessageID}, {"seq", fmt.Sprint(p.Sequence)}}
	case protocol.TypeChatMessageAck:
		var p protocol.ChatAckPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"message_id", p.MessageID}, {"status", p.Status}, {"code", p.Code}}
	case protocol.TypeChatActivity:
		var p protocol.ChatActivityPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"status", p.Status}, {"tool", p.ToolName}}
	case protocol.TypeMessagePush:
		var p protocol.MessagePushPayload
		_ = env.DecodePayload(&p)
		return [][2]string{{"message_id", p.MessageID}}
	}
	return nil
}

func eventLine(ev host.Event) string {
	switch ev.Kind {
	case host.EventHealth:
		return fmt.Sprintf("** %s health %s %s", ev.CardID, ev.Health, ev.Detail)
	case host.EventLink:
		return fmt.Sprintf("** %s data plane %s %s", ev.CardID, ev.Link, ev.Detail)
	}
	return fmt.Sprintf("** %s %s %s", ev.Kind, ev.UserChannelID, ev.Detail)
}

// flowList names the auth flows of a Card for an error message.
func flowList(card *protocol.Card) string {
	if len(card.AuthFlows) == 0 {
		return "no auth flows"
	}
	ids := make([]string, len(card.AuthFlows))
	for i, fl := range card.AuthFlows {
		ids[i] = fl.ID
	}
	return "the flows " + strings.Join(ids, ", ")
}
