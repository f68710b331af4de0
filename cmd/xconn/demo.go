package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/qr"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Settings of "xconn demo".
const (
	demoUser       = "demo"
	demoAPIKeyFile = "demo-api.key"
	demoOnlineWait = 15 * time.Second
	// demoMaxSignins bounds how many QR sign-ins the demo starts in a row
	// while nobody scans (each lasts up to the host's sign-in timeout).
	demoMaxSignins = 6
)

func newDemoCmd() *cobra.Command {
	var f webchatFlags
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the web chat connector with an embedded xAgent host and the Echo agent",
		Long: `Run the whole system in one process: the web chat connector, an embedded xAgent
host that admits it, and an agent (Echo by default, or a model with --agent
openai, whose server, key and model are checked at start unless
--no-preflight). The demo prints which agent answers, opens a channel
(reusing the stored one on restart), starts a QR sign-in and prints the QR
code and the login URL; then it logs sign-in, messages, deltas and acks. A
restart that finds the channel signed in with a browser prints the chat page
URL and no new QR code (the browsers signed in before stay signed in);
--signin asks for a new one, and so does a channel whose browsers all signed
out. State lives in --data, which one process uses at a time. Ctrl-C stops
it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.agent.check(); err != nil {
				return err
			}
			var err error
			if o.pretty, o.level, err = f.log.resolve(cmd.OutOrStdout()); err != nil {
				return err
			}
			if err := o.privateDownloads.resolve(cmd); err != nil {
				return err
			}
			if err := runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f, o); err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return err
				}
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	f.register(cmd, false)
	o.agent.register(cmd.Flags(), `agent behind the embedded host: "echo", or "openai" (any OpenAI-compatible server, with --model and --base-url)`)
	cmd.Flags().DurationVar(&o.pace, "pace", 80*time.Millisecond, "pause before each streamed delta of the echo agent, so streaming is visible (0 = none)")
	cmd.Flags().BoolVar(&o.signin, "signin", false, "start a new QR sign-in even when the stored channel is signed in (to add a browser)")
	o.privateDownloads.register(cmd.Flags())
	return cmd
}

// demoOptions are the demo's own settings beside the web chat flags.
type demoOptions struct {
	agent  agentFlags
	pace   time.Duration // of the echo agent's deltas
	pretty bool          // the readable view on stdout; else structured records on stderr
	level  slog.Level
	signin bool // a new QR sign-in even for a signed-in channel
	// privateDownloads is host.Options.AllowPrivateDownloads.
	privateDownloads privateDownloadsFlag
}

// demoAgent is the --agent seam: it maps the agent flags to a host.Agent
// that logs to log (the demo's one logger). The echo agent is paced so
// that streaming is visible; a model streams at its own pace. The openai
// agent is bound to the host and its store in runDemo.
func demoAgent(af *agentFlags, pace time.Duration, log *slog.Logger, secrets *connector.Redactor) (host.Agent, error) {
	a, err := af.build(log, secrets)
	if err != nil {
		return nil, err
	}
	if pace > 0 && af.name == agentEcho {
		a = pacedAgent{next: a, pace: pace}
	}
	return a, nil
}

// pacedAgent slows an agent's deltas down so that a human sees them
// stream. It is stateless and safe for concurrent use.
type pacedAgent struct {
	next host.Agent
	pace time.Duration
}

func (p pacedAgent) HandleMessage(ctx context.Context, msg *host.UserMessage, reply host.ReplyStream) error {
	return p.next.HandleMessage(ctx, msg, pacedStream{ReplyStream: reply, pace: p.pace})
}

type pacedStream struct {
	host.ReplyStream
	pace time.Duration
}

func (s pacedStream) Delta(ctx context.Context, text string) error {
	t := time.NewTimer(s.pace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.ReplyStream.Delta(ctx, text)
}

// runDemo runs the demo until ctx ends. Its output has one style (see
// demoOptions.pretty): the readable view on out, warnings included (the
// agent's too), or structured records on errOut.
func runDemo(ctx context.Context, out, errOut io.Writer, f webchatFlags, o demoOptions) error {
	p := &demoPrinter{w: out}
	secrets := connector.NewRedactor(0)
	log := newLogger(o.pretty, o.level, &p.mu, out, errOut, secrets)
	if !o.pretty {
		p.log = log
	}
	agent, err := demoAgent(&o.agent, o.pace, log, secrets)
	if err != nil {
		return err
	}
	// The lock first: a second demo on this directory stops before it
	// touches anything.
	lock, err := lockWebchatData(ctx, f)
	if err != nil {
		return err
	}
	p.say("%s", o.agent.describe())
	if err := o.agent.preflight(ctx, agent, log); err != nil {
		if ctx.Err() != nil {
			lock.Close()
			return nil
		}
		lock.Close()
		return err
	}
	apiKey, err := demoLoadOrCreateSecret(filepath.Join(f.dataDir, demoAPIKeyFile))
	if err != nil {
		lock.Close()
		return err
	}
	f.apiKey = apiKey
	secrets.Add(apiKey)
	rt, err := startWebchat(ctx, f, lock, "webchat.db", log)
	if err != nil {
		return err
	}
	defer demoServe(rt)() // deferred first: the connector stops after the host
	p.say("Web chat connector at %s (chat pages under %s)", rt.baseURL, rt.conn.WebURL())

	hostDSN := f.storeDSN
	if hostDSN == "" {
		hostDSN = "sqlite:" + filepath.Join(f.dataDir, "host.db")
	}
	hdb, err := store.Open(ctx, hostDSN, store.Options{DataDir: f.dataDir})
	if err != nil {
		return fmt.Errorf("open host store: %w", err)
	}
	defer hdb.Close()
	h, err := host.New(host.Options{
		Store:    hdb,
		Delivery: hdb,
		Agent:    agent,
		OnPacket: p.packet,
		OnEvent:  p.event,
		Logger:   log,
		FilesDir: filepath.Join(f.dataDir, "host-files"),
		// The connector's own origin is always fetched; this reaches
		// private addresses of other origins too.
		AllowPrivateDownloads: o.privateDownloads.allow,
	})
	if err != nil {
		return err
	}
	bindAgent(agent, h, hdb)
	if err := h.Start(ctx); err != nil {
		return fmt.Errorf("start host: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = h.Close(cctx)
	}()
	if err := demoAdmit(ctx, h, rt.baseURL, apiKey, p); err != nil {
		return err
	}
	if err := demoWaitOnline(ctx, h, webchat.CardID); err != nil {
		return err
	}
	err = demoSignins(ctx, h, rt.conn, p, o.signin)
	if ctx.Err() != nil {
		p.say("Stopping…")
		return nil
	}
	return err
}

// demoServe serves the started connector of rt and returns the function
// that stops it: the connector first (the browsers' event streams, then the
// sockets), then the listeners and the store. It does not use the SDK's
// Serve, which stops on SIGINT by itself: it would close the connector
// while the embedded host is still cancelling its sign-in and closing its
// channel.
func demoServe(rt *webchatRuntime) (stop func()) {
	handlers := map[net.Listener]http.Handler{rt.ln: rt.conn.Server()}
	if rt.pubLn != nil {
		handlers[rt.pubLn] = rt.conn.WebHandler()
	}
	var servers []*http.Server
	var wg sync.WaitGroup
	for ln, h := range handlers {
		srv := connector.NewHTTPServer(h, rt.log) // timeouts and a bound on open connections
		servers = append(servers, srv)
		wg.Go(func() { _ = srv.Serve(ln) })
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = rt.conn.Server().Close(ctx)
		for _, srv := range servers {
			if srv.Shutdown(ctx) != nil {
				_ = srv.Close()
			}
		}
		wg.Wait()
		_ = rt.db.Close()
		_ = rt.lock.Close()
	}
}

// demoAdmit admits the connector, replacing a stored admission of the same
// card at another Base URL (a changed --listen).
func demoAdmit(ctx context.Context, h *host.Host, baseURL, apiKey string, p *demoPrinter) error {
	if c, ok := h.Connector(webchat.CardID); ok && c.BaseURL != baseURL {
		p.say("The stored connector was at %s; admitting %s instead", c.BaseURL, baseURL)
		if err := h.Remove(ctx, webchat.CardID); err != nil {
			return fmt.Errorf("remove old admission: %w", err)
		}
	}
	c, err := h.Admit(ctx, baseURL, apiKey)
	if err != nil {
		return fmt.Errorf("admit the web chat connector: %w", err)
	}
	p.say("Host admitted %s (%s %s)", c.CardID, c.Card.Connector.Name, c.Card.Connector.Version)
	return nil
}

func demoWaitOnline(ctx context.Context, h *host.Host, cardID string) error {
	ctx, cancel := context.WithTimeout(ctx, demoOnlineWait)
	defer cancel()
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		if c, ok := h.Connector(cardID); ok && c.Link == host.LinkOnline {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the data plane of %s did not come online: %w", cardID, ctx.Err())
		case <-t.C:
		}
	}
}

// demoSignins opens (or reuses) the demo user's channel and runs QR
// sign-ins, printing each QR code and login URL, until one succeeds; then
// it waits for ctx.
func demoSignins(ctx context.Context, h *host.Host, conn *webchat.Connector, p *demoPrinter, force bool) error {
	if !force {
		chans, err := h.Channels(ctx, demoUser, webchat.CardID)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		if len(chans) > 0 && chans[0].Authenticated && conn.QRBrowsers(chans[0].ChannelID) > 0 {
			p.tell("Resuming channel %s (signed in; browsers signed in before stay signed in). Chat page: %s", chans[0].ChannelID, conn.WebURL())
			p.tell("No new QR code: the channel is signed in (--signin starts one for another browser). Ctrl-C stops the demo.")
			<-ctx.Done()
			return nil
		}
	}
	for range demoMaxSignins {
		s, err := startDemoSignin(ctx, h, p)
		if err != nil {
			return err
		}
		uc, err := followSignin(ctx, s, p)
		if err == nil {
			if p.log == nil { // the structured style has the connector's record of it
				p.say("Signed in: channel %s. Chat page: %s", uc.ChannelID, conn.WebURL())
			} else {
				p.mu.Lock()
				fmt.Fprintf(p.w, "Signed in: channel %s. Chat page: %s\n", uc.ChannelID, conn.WebURL())
				p.mu.Unlock()
			}
			p.tell("Write a message in the browser; Ctrl-C stops the demo.")
			<-ctx.Done()
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		p.say("Sign-in ended (%v); starting a new one", err)
	}
	p.tell("Nobody signed in; the demo keeps serving. Ctrl-C stops it.")
	<-ctx.Done()
	return nil
}

func startDemoSignin(ctx context.Context, h *host.Host, p *demoPrinter) (*host.Signin, error) {
	chans, err := h.Channels(ctx, demoUser, webchat.CardID)
	if err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	if len(chans) > 0 {
		uc := chans[0]
		state := "signed out"
		if uc.Authenticated {
			state = "signed in; browsers signed in before stay signed in"
		}
		p.tell("Resuming channel %s (%s)", uc.ChannelID, state)
		s, err := h.Reauthenticate(ctx, uc.ID, webchat.FlowQR, nil)
		if err != nil {
			return nil, fmt.Errorf("start QR sign-in: %w", err)
		}
		return s, nil
	}
	s, err := h.Connect(ctx, demoUser, webchat.CardID, webchat.FlowQR, nil)
	if err != nil {
		return nil, fmt.Errorf("start QR sign-in: %w", err)
	}
	p.say("Opened channel %s", s.State().ChannelID)
	return s, nil
}

// followSignin prints the QR code whenever it changes and logs the
// sign-in's states until it ends.
func followSignin(ctx context.Context, s *host.Signin, p *demoPrinter) (store.UserChannel, error) {
	var lastQR string
	var lastStatus protocol.AuthStatus
	show := func(st host.SigninState) {
		if st.QRCodeText != "" && st.QRCodeText != lastQR {
			lastQR = st.QRCodeText
			p.qr(st.QRCodeText, st.ExpiresAt)
		}
		if st.Status != lastStatus {
			lastStatus = st.Status
			if st.Status != protocol.AuthAuthenticated { // "Signed in: ..." says that one
				p.say("sign-in: %s", st.Status)
			}
		}
	}
	show(s.State())
	for {
		select {
		case st, ok := <-s.Updates():
			if !ok {
				return s.Wait(ctx)
			}
			show(st)
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = s.Cancel(cctx)
			return store.UserChannel{}, ctx.Err()
		}
	}
}

// demoLoadOrCreateSecret reads a hex secret file, creating it (mode 0600)
// when absent.
func demoLoadOrCreateSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) > 0 {
		if err := checkSecretFileMode(path); err != nil {
			return "", err
		}
		return string(b), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("secret file: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	s := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	return s, nil
}

// demoPrinter writes the demo's readable log lines. Safe for concurrent
// use (packet observers run on the host's goroutines).
type demoPrinter struct {
	mu  sync.Mutex
	w   io.Writer
	log *slog.Logger // structured style: every line is a record here
}

func (p *demoPrinter) say(format string, args ...any) {
	if p.log != nil {
		p.log.Info(fmt.Sprintf(format, args...))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// tell writes a line meant for the person running the demo (how to sign
// in, where the chat page is): in the readable style like say; in the
// structured style both as a record and, without a timestamp, on stdout,
// which holds only such lines then.
func (p *demoPrinter) tell(format string, args ...any) {
	if p.log == nil {
		p.say(format, args...)
		return
	}
	msg := fmt.Sprintf(format, args...)
	p.log.Info(msg)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, msg)
}

// qr prints a QR code and, on a line of its own, the login URL, on stdout
// in either style (in the structured style a record of it goes to the log
// too): a person has to see it to sign in.
func (p *demoPrinter) qr(text string, expires time.Time) {
	if p.log != nil {
		p.log.Info("sign-in: scan the QR code or open the login URL", "login_url", text, "valid_until", expires.UTC().Format(time.RFC3339))
	}
	art, err := qr.Terminal(text)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w)
	if err == nil {
		fmt.Fprint(p.w, art)
	}
	fmt.Fprintln(p.w, "Scan the QR code with a phone, or open the login URL in a browser on this machine:")
	fmt.Fprintf(p.w, "Login URL: %s\n", text)
	if !expires.IsZero() {
		fmt.Fprintf(p.w, "(valid until %s; a new one follows when it expires)\n", expires.Local().Format("15:04:05"))
	}
	fmt.Fprintln(p.w)
}

// packet logs one data-plane packet: the type, the channel and, for chat
// packets, the readable parts. Auth and tool payloads are never printed
// (they may hold form input or tokens).
func (p *demoPrinter) packet(dir protocol.Direction, _ string, env *protocol.Envelope) {
	arrow := "host → connector"
	if dir == protocol.ToHost {
		arrow = "connector → host"
	}
	detail := ""
	switch env.Type {
	case protocol.TypePing, protocol.TypePong, protocol.TypeAuthStatus, protocol.TypeAuthStatusAck:
		return // periodic; sign-in states are logged as "sign-in: <status>"
	case protocol.TypeChatMessage:
		var m protocol.ChatMessagePayload
		if env.DecodePayload(&m) == nil {
			who := "user"
			if dir == protocol.ToConnector {
				who = "assistant"
			}
			detail = fmt.Sprintf("%s message %s %q", who, m.MessageID, demoTrim(m.Text, 80))
			if len(m.Files) > 0 {
				detail += fmt.Sprintf(" +%d file(s)", len(m.Files))
			}
		}
	case protocol.TypeChatMessageDelta:
		var d protocol.ChatDeltaPayload
		if env.DecodePayload(&d) == nil {
			detail = fmt.Sprintf("delta %s #%d %q", d.MessageID, d.Sequence, demoTrim(d.Text, 40))
		}
	case protocol.TypeChatMessageAck:
		var a protocol.ChatAckPayload
		if env.DecodePayload(&a) == nil {
			detail = fmt.Sprintf("ack %s %s", a.MessageID, a.Status)
			if a.Code != "" {
				detail += " " + a.Code
			}
		}
	case protocol.TypeChatActivity:
		var a protocol.ChatActivityPayload
		if env.DecodePayload(&a) == nil {
			detail = "activity " + a.Status
			if a.ToolName != "" {
				detail += " " + a.ToolName
			}
		}
	case protocol.TypeAuthStartAck:
		var a protocol.AuthStatePayload
		if env.DecodePayload(&a) == nil {
			detail = "status " + a.Status
		}
	}
	if env.Error != nil {
		detail += " error " + env.Error.Code
	}
	ch := env.ConnectorChannelID
	if ch == "" {
		ch = "-"
	}
	if p.log != nil {
		p.log.Info("packet", "dir", arrow, "type", env.Type, "channel", ch, "detail", detail)
		return
	}
	p.say("%s  %-26s %s %s", arrow, env.Type, ch, detail)
}

// event logs host state changes worth seeing in a demo.
func (p *demoPrinter) event(ev host.Event) {
	switch ev.Kind {
	case host.EventLink:
		p.say("data plane: %s %s", ev.Link, ev.Detail)
	case host.EventHealth:
		p.say("health: %s %s", ev.Health, ev.Detail)
	case host.EventDelivery:
		p.say("delivery: %s", ev.Detail)
	}
}
