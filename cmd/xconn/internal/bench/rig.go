package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Identifiers of the bench connector.
const (
	benchCardID   = "xconn.bench"
	benchFlow     = "bench_form"
	benchField    = "name"
	toolEcho      = "bench_echo"
	toolSlow      = "bench_slow"
	benchUser     = "bench-user"
	onlineTimeout = 15 * time.Second
)

// benchCard is the static Card of the in-process bench connector.
func benchCard() *protocol.Card {
	return &protocol.Card{
		Schema:          protocol.CardSchema,
		ProtocolVersion: protocol.ProtocolVersion,
		Build:           protocol.Build{Version: "0.0.1", GitTag: "v0.0.1", GitRev: "bench00", BuildTime: "2612021200"},
		ConnectorCardID: benchCardID,
		Connector:       protocol.CardInfo{Name: "Bench", Version: "0.0.1", Vendor: "xconn", Description: "In-process connector of xconn bench"},
		Supports: protocol.Supports{
			UserChannelMode: protocol.UserChannelMultiple,
			TargetTypes:     []protocol.TargetType{protocol.TargetIM},
			Targets:         []protocol.Target{{TargetType: protocol.TargetIM, Provider: "bench", Label: "Bench"}},
			Profiles:        []protocol.Profile{protocol.ProfileIMv2},
		},
		AuthFlows: []protocol.AuthFlow{{ID: benchFlow, TargetType: protocol.TargetIM, Type: protocol.AuthFlowForm, Title: "Bench",
			Fields: []protocol.AuthField{{Name: benchField, Label: "Name", InputType: protocol.InputText, Required: true}}}},
		Security: &protocol.Security{TrustLevel: protocol.TrustLocal},
	}
}

// echoIn and echoOut are the arguments and result of the bench tools.
type echoIn struct {
	Text string `json:"text"`
}
type echoOut struct {
	Text string `json:"text"`
}

// rigOptions tunes a rig.
type rigOptions struct {
	handlerLatency time.Duration
	maxFile        int64
	agent          host.Agent
	onAssistant    connector.MessageHandler
	onPacket       host.PacketObserver
	proxy          bool // put a droppable TCP proxy between host and connector
	noHost         bool
	workers        int
	logger         *slog.Logger
	// store is "" (one SQLite file per side) or a PostgreSQL DSN (one
	// schema per side, dropped at close).
	store string
}

// rig is a connector and a host in one process over loopback, each on its
// own SQLite file. Close stops both and waits for their goroutines.
type rig struct {
	dir     string
	cdb     *store.DB
	hdb     *store.DB
	conn    *connector.Server
	srv     *server
	proxy   *proxy
	host    *host.Host
	cardID  string
	baseURL string // the connector (direct)
	drops   []func()
}

// storeDSN returns the DSN of one side's store: a SQLite file in dir, or a
// fresh schema on the PostgreSQL server of o.store.
func (r *rig) storeDSN(ctx context.Context, o rigOptions, side string) (string, error) {
	if !isPostgres(o.store) {
		return "sqlite:" + filepath.Join(r.dir, side+".db"), nil
	}
	dsn, drop, err := pgSchema(ctx, o.store, "xconn_bench_"+side+"_")
	if err != nil {
		return "", err
	}
	r.drops = append(r.drops, drop)
	return dsn, nil
}

func newRig(ctx context.Context, dir string, o rigOptions) (_ *rig, err error) {
	r := &rig{dir: dir, cardID: benchCardID}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	cdsn, err := r.storeDSN(ctx, o, "connector")
	if err != nil {
		return nil, err
	}
	if r.cdb, err = store.Open(ctx, cdsn, store.Options{DataDir: dir}); err != nil {
		return nil, fmt.Errorf("bench: open connector store: %w", err)
	}
	maxUpload := o.maxFile + 1
	if maxUpload < connector.DefaultMaxUploadBytes {
		maxUpload = connector.DefaultMaxUploadBytes
	}
	r.conn, err = connector.New(connector.Options{Card: benchCard(), Store: r.cdb,
		DataDir: filepath.Join(dir, "connector-files"), MaxUploadBytes: maxUpload, Workers: o.workers,
		ChannelQueue: 1024, SendQueue: 4096, Logger: o.logger})
	if err != nil {
		return nil, fmt.Errorf("bench: connector: %w", err)
	}
	slow := o.handlerLatency
	if err := connector.AddTool(r.conn, toolEcho, func(ctx context.Context, _ *connector.Call, in echoIn) (echoOut, error) {
		return echoOut(in), nil
	}, connector.ToolOptions{Description: "Echo text back.", Public: true}); err != nil {
		return nil, err
	}
	if err := connector.AddTool(r.conn, toolSlow, func(ctx context.Context, _ *connector.Call, in echoIn) (echoOut, error) {
		t := time.NewTimer(slow)
		defer t.Stop()
		select {
		case <-t.C:
			return echoOut(in), nil
		case <-ctx.Done():
			return echoOut{}, ctx.Err()
		}
	}, connector.ToolOptions{Description: "Echo text back after a target latency.", Public: true}); err != nil {
		return nil, err
	}
	if err := r.conn.AddAuthFlow(benchFlow, connector.Form(func(ctx context.Context, ch *connector.Channel, in connector.Input) (connector.Binding, error) {
		return connector.Binding{Data: []byte("bench"), DisplayName: in.Get(benchField), AccountHint: "be***"}, nil
	})); err != nil {
		return nil, err
	}
	onAssistant := o.onAssistant
	if onAssistant == nil {
		onAssistant = func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil }
	}
	r.conn.OnAssistantMessage(onAssistant)
	if err := r.conn.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench: connector start: %w", err)
	}
	if r.srv, err = listen(r.conn); err != nil {
		return nil, err
	}
	r.baseURL = r.srv.url
	if o.noHost {
		return r, nil
	}
	target := r.srv.url
	if o.proxy {
		if r.proxy, err = newProxy(r.srv.ln.Addr().String()); err != nil {
			return nil, err
		}
		target = "http://" + r.proxy.ln.Addr().String()
	}
	hdsn, err := r.storeDSN(ctx, o, "host")
	if err != nil {
		return nil, err
	}
	if r.hdb, err = store.Open(ctx, hdsn, store.Options{DataDir: dir}); err != nil {
		return nil, fmt.Errorf("bench: open host store: %w", err)
	}
	agent := o.agent
	if agent == nil {
		agent = host.AgentFunc(func(context.Context, *host.UserMessage, host.ReplyStream) error { return nil })
	}
	maxFile := o.maxFile + 1
	if maxFile < host.DefaultMaxFileBytes {
		maxFile = host.DefaultMaxFileBytes
	}
	ho := host.Options{Store: r.hdb, Delivery: r.hdb, Agent: agent, OnPacket: o.onPacket,
		FilesDir: filepath.Join(dir, "host-files"), HealthInterval: time.Hour,
		ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
		MaxFileBytes: maxFile, MaxInFlight: 1 << 16, HTTPTimeout: 10 * time.Minute, Logger: o.logger}
	if r.host, err = host.New(ho); err != nil {
		return nil, fmt.Errorf("bench: host: %w", err)
	}
	if err := r.host.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench: host start: %w", err)
	}
	c, err := r.host.Admit(ctx, target, "")
	if err != nil {
		return nil, fmt.Errorf("bench: admit: %w", err)
	}
	r.cardID = c.CardID
	if err := r.waitOnline(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// waitOnline waits until the host's data plane to the connector is online.
func (r *rig) waitOnline(ctx context.Context) error {
	deadline := time.Now().Add(onlineTimeout)
	for {
		if c, ok := r.host.Connector(r.cardID); ok && c.Link == host.LinkOnline {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("bench: host data plane not online")
		}
		sleep(ctx, 2*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// signIn signs n user channels in through the host, workers at a time,
// each bound to session "s<i>" when bind is set, and returns them in order.
func (r *rig) signIn(ctx context.Context, n, workers int, bind bool) ([]store.UserChannel, error) {
	out := make([]store.UserChannel, n)
	_, err := parallel(ctx, n, workers, time.Time{}, func(ctx context.Context, i int) error {
		session := ""
		if bind {
			session = "s" + strconv.Itoa(i)
		}
		uc, err := r.signInOne(ctx, benchUser, session)
		out[i] = uc
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *rig) signInOne(ctx context.Context, user, session string) (store.UserChannel, error) {
	s, err := r.host.Connect(ctx, user, r.cardID, benchFlow, map[string]string{benchField: user})
	if err != nil {
		return store.UserChannel{}, fmt.Errorf("bench: connect: %w", err)
	}
	uc, err := s.Wait(ctx)
	if err != nil {
		return store.UserChannel{}, fmt.Errorf("bench: sign-in: %w", err)
	}
	if session != "" {
		if err := r.host.BindSession(ctx, uc.ID, session); err != nil {
			return store.UserChannel{}, fmt.Errorf("bench: bind session: %w", err)
		}
	}
	return uc, nil
}

// invoke calls tool with args in session through the host.
func (r *rig) invoke(ctx context.Context, session, tool string, args json.RawMessage, callID string) error {
	_, err := r.host.Invoke(ctx, benchUser, session, tool, args, callID)
	return err
}

// close stops everything the rig started, in reverse order.
func (r *rig) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.host != nil {
		_ = r.host.Close(ctx)
	}
	if r.hdb != nil {
		_ = r.hdb.Close()
	}
	if r.proxy != nil {
		r.proxy.close()
	}
	if r.conn != nil {
		_ = r.conn.Close(ctx)
	}
	if r.srv != nil {
		r.srv.close()
	}
	if r.cdb != nil {
		_ = r.cdb.Close()
	}
	for _, drop := range r.drops {
		drop()
	}
}

// server is a loopback HTTP server owned by a scenario.
type server struct {
	ln   net.Listener
	hs   *http.Server
	url  string
	done chan struct{}
}

func listen(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	s := &server{ln: ln, hs: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String(), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.hs.Serve(ln)
	}()
	return s, nil
}

func (s *server) close() {
	_ = s.hs.Close()
	<-s.done
}

// scenarioDir returns cfg.Dir/name (created) or a new temporary directory,
// and a function that removes what was created.
func scenarioDir(cfg Config, name string) (string, func(), error) {
	if cfg.Dir != "" {
		d := filepath.Join(cfg.Dir, name)
		if err := os.RemoveAll(d); err != nil {
			return "", nil, fmt.Errorf("bench: clean %s: %w", d, err)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", nil, fmt.Errorf("bench: %w", err)
		}
		return d, func() { _ = os.RemoveAll(d) }, nil
	}
	d, err := os.MkdirTemp("", "xconn-bench-"+name+"-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: %w", err)
	}
	return d, func() { _ = os.RemoveAll(d) }, nil
}
