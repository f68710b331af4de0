package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// Environment of the chaos host child: secrets never go on a command line.
const (
	envChaosAccessCode = "XCONN_CHAOS_ACCESS_CODE"
)

// chaosRecord is one line of the host child's journal, which the chaos
// driver reads: what the host received, acknowledged and invoked.
type chaosRecord struct {
	Kind   string `json:"k"`                // recv, answered, ack, tool-start, tool-done, ready, metrics
	ID     string `json:"id,omitempty"`     // message_id (recv, answered, ack)
	Text   string `json:"text,omitempty"`   // recv: the message text
	Status string `json:"status,omitempty"` // ack: accepted, duplicate, rejected
	Call   string `json:"call,omitempty"`   // tool-*: the tool call id
	Result string `json:"result,omitempty"` // tool-done: the page message id
	Room   string `json:"room,omitempty"`
	Addr   string `json:"addr,omitempty"` // metrics: host:port of /metrics
	PID    int    `json:"pid,omitempty"`
	At     int64  `json:"t,omitempty"` // unix milliseconds, for reading a kept run
}

// chaosJournal appends records to a file, one write per line so that a
// SIGKILL leaves whole lines. Safe for concurrent use.
type chaosJournal struct {
	mu sync.Mutex
	f  *os.File
}

func (j *chaosJournal) add(r chaosRecord) {
	r.At = time.Now().UnixMilli()
	b, _ := json.Marshal(r)
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.f.Write(append(b, '\n'))
}

// readChaosJournal returns the records of a journal file (none when it
// does not exist); a torn last line is skipped.
func readChaosJournal(path string) ([]chaosRecord, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []chaosRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var r chaosRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

type chaosHostFlags struct {
	dataDir        string
	journal        string
	rooms          []string
	toolEvery      time.Duration
	newConnectorID bool
	pauseFile      string
}

// newChaosHostCmd is the hidden host child of "xconn chaos": an embedded
// xAgent host with an echo agent that signs in to web chat rooms, answers
// every message once (remembering answered message ids in its journal, as
// an agent platform keeps its own record), makes side-effecting
// webchat_message_send calls (retrying each call id until it has a
// result) and journals what it did.
func newChaosHostCmd() *cobra.Command {
	var f chaosHostFlags
	cmd := &cobra.Command{
		Use:    "host-child BASE_URL",
		Short:  "The host process of a chaos run (internal)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runChaosHost(cmd.Context(), args[0], f); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data", "", "data directory of the host")
	fs.StringVar(&f.journal, "journal", "", "journal file")
	fs.StringSliceVar(&f.rooms, "rooms", nil, "web chat rooms to sign in to")
	fs.DurationVar(&f.toolEvery, "tool-every", 2*time.Second, "pause between tool calls per room (0: none)")
	fs.BoolVar(&f.newConnectorID, "new-connector-id", false, "forget the stored connector_id before connecting")
	fs.StringVar(&f.pauseFile, "pause-file", "", "make no new tool call while this file exists")
	return cmd
}

func runChaosHost(ctx context.Context, baseURL string, f chaosHostFlags) error {
	apiKey, code := os.Getenv("XCONN_API_KEY"), os.Getenv(envChaosAccessCode)
	if f.dataDir == "" || f.journal == "" || len(f.rooms) == 0 || apiKey == "" || code == "" {
		return errors.New("host-child needs --data, --journal, --rooms, XCONN_API_KEY and " + envChaosAccessCode)
	}
	past, err := readChaosJournal(f.journal)
	if err != nil {
		return err
	}
	jf, err := os.OpenFile(f.journal, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer jf.Close()
	j := &chaosJournal{f: jf}

	if err := os.MkdirAll(f.dataDir, 0o700); err != nil {
		return err
	}
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(f.dataDir, hostDBFile), store.Options{DataDir: f.dataDir})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer db.Close()
	if f.newConnectorID {
		es, err := db.ListCatalog(ctx)
		if err != nil {
			return err
		}
		for _, e := range es {
			e.ConnectorID = ""
			if err := db.UpdateCatalog(ctx, e); err != nil {
				return err
			}
		}
	}

	secrets := connector.NewRedactor(0)
	secrets.Add(apiKey, code)
	logger := slog.New(connector.NewRedactingHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), secrets))

	// Metrics of this process (goroutines) for the driver's leak check.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	msrv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	mdone := make(chan struct{})
	go func() { defer close(mdone); _ = msrv.Serve(mln) }()
	defer func() { _ = msrv.Close(); <-mdone }()
	j.add(chaosRecord{Kind: "metrics", Addr: mln.Addr().String(), PID: os.Getpid()})

	answered := map[string]bool{}
	for _, r := range past {
		if r.Kind == "answered" {
			answered[r.ID] = true
		}
	}
	ag := &chaosAgent{j: j, answered: answered}
	h, err := host.New(host.Options{
		Store: db, Delivery: db, Agent: ag, Logger: logger,
		FilesDir: filepath.Join(f.dataDir, "files"),
		OnPacket: func(dir protocol.Direction, _ string, env *protocol.Envelope) {
			if dir != protocol.ToConnector || env.Type != protocol.TypeChatMessageAck {
				return
			}
			var p protocol.ChatAckPayload
			if env.DecodePayload(&p) == nil {
				j.add(chaosRecord{Kind: "ack", ID: p.MessageID, Status: string(p.Status)})
			}
		},
		OnSecret:             secrets.Add,
		ReconnectMin:         100 * time.Millisecond,
		ReconnectMax:         time.Second,
		MaxReconnectFailures: 1 << 30,
		RequestTimeout:       10 * time.Second,
		ToolTimeout:          15 * time.Second,
		HealthInterval:       5 * time.Second,
	})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = h.Close(cctx)
	}()
	var c *host.Connector
	for {
		if c, err = h.Admit(ctx, baseURL, apiKey); err == nil {
			break
		}
		if !sleepCtx(ctx, 300*time.Millisecond) {
			return nil
		}
	}
	chans := map[string]store.UserChannel{}
	for _, room := range f.rooms {
		uc, err := chaosSignIn(ctx, h, c.CardID, room, code)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("sign in to %s: %s", room, secrets.Scrub(err.Error()))
		}
		chans[room] = uc
		j.add(chaosRecord{Kind: "ready", Room: room, ID: uc.ChannelID})
	}
	if f.toolEvery <= 0 {
		<-ctx.Done()
		return nil
	}
	// Tool calls: unfinished ones of a previous run first, same call ids.
	next := map[string]int{}
	var unfinished []chaosRecord
	done := map[string]bool{}
	for _, r := range past {
		if r.Kind == "tool-done" {
			done[r.Call] = true
		}
	}
	for _, r := range past {
		if r.Kind == "tool-start" {
			var n int
			if _, err := fmt.Sscanf(strings.TrimPrefix(r.Call, "tc-"+r.Room+"-"), "%d", &n); err == nil && n >= next[r.Room] {
				next[r.Room] = n + 1
			}
			if !done[r.Call] {
				unfinished = append(unfinished, r)
				done[r.Call] = true // once
			}
		}
	}
	var wg sync.WaitGroup
	for _, room := range f.rooms {
		var mine []string
		for _, r := range unfinished {
			if r.Room == room {
				mine = append(mine, r.Call)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			chaosTools(ctx, h, j, chans[room], room, mine, next[room], f.toolEvery, f.pauseFile)
		}()
	}
	wg.Wait()
	return nil
}

// chaosSignIn reuses the room's authenticated channel or signs in with the
// webchat_room flow.
func chaosSignIn(ctx context.Context, h *host.Host, cardID, room, code string) (store.UserChannel, error) {
	user := "chaos-" + room
	for {
		ucs, err := h.Channels(ctx, user, cardID)
		if err != nil {
			return store.UserChannel{}, err
		}
		for _, uc := range ucs {
			if uc.Authenticated {
				return uc, nil
			}
		}
		in := map[string]string{"room": room, "access_code": code}
		var s *host.Signin
		if len(ucs) > 0 {
			s, err = h.Reauthenticate(ctx, ucs[0].ID, webchat.FlowRoom, in)
		} else {
			s, err = h.Connect(ctx, user, cardID, webchat.FlowRoom, in)
		}
		if err == nil {
			uc, err := s.Wait(ctx)
			if err == nil {
				return uc, nil
			}
		}
		if ctx.Err() != nil {
			return store.UserChannel{}, ctx.Err()
		}
		if !sleepCtx(ctx, 500*time.Millisecond) { // the connector may be restarting
			return store.UserChannel{}, ctx.Err()
		}
	}
}

// chaosTools makes webchat_message_send calls on one room until ctx ends:
// retry first (each id until it has a result), then new ids from next.
func chaosTools(ctx context.Context, h *host.Host, j *chaosJournal, uc store.UserChannel, room string, retry []string, next int, every time.Duration, pauseFile string) {
	call := func(id string) bool {
		for {
			args, _ := json.Marshal(map[string]string{"connector_channel_id": uc.ChannelID, "text": "tool " + id})
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			res, err := h.Invoke(cctx, uc.UserID, uc.SessionID, webchat.ToolSend, args, id, host.WithUserChannel(uc.ID))
			cancel()
			if err == nil {
				var out webchat.SendResult
				if json.Unmarshal(res.Output, &out) == nil && out.MessageID != "" {
					j.add(chaosRecord{Kind: "tool-done", Call: id, Result: out.MessageID, Room: room})
					return true
				}
			}
			if !sleepCtx(ctx, 300*time.Millisecond) {
				return false
			}
		}
	}
	for _, id := range retry {
		if !call(id) {
			return
		}
	}
	for n := next; ; n++ {
		if !sleepCtx(ctx, every) {
			return
		}
		for pauseFile != "" && fileExists(pauseFile) { // the driver waits for quiescence
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
		}
		id := fmt.Sprintf("tc-%s-%d", room, n)
		j.add(chaosRecord{Kind: "tool-start", Call: id, Room: room})
		if !call(id) {
			return
		}
	}
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// chaosAgent is the echo agent of the host child; it answers a message id
// once across restarts (the journal's answered records).
type chaosAgent struct {
	j        *chaosJournal
	mu       sync.Mutex
	answered map[string]bool
}

func (a *chaosAgent) HandleMessage(ctx context.Context, msg *host.UserMessage, reply host.ReplyStream) error {
	a.j.add(chaosRecord{Kind: "recv", ID: msg.MessageID, Text: msg.Text})
	a.mu.Lock()
	seen := a.answered[msg.MessageID]
	a.mu.Unlock()
	if seen {
		return nil
	}
	// host.Echo, with the answer recorded as soon as the final is queued
	// (the trailing idle activity is best effort).
	if err := reply.Activity(ctx, protocol.ActivityThinking, ""); err != nil {
		return err
	}
	text := host.EchoText(msg)
	for i, w := range strings.Fields(text) {
		if i > 0 {
			w = " " + w
		}
		if err := reply.Delta(ctx, w); err != nil {
			return err
		}
	}
	files := make([]host.OutgoingFile, 0, len(msg.Files))
	for _, f := range msg.Files {
		files = append(files, host.OutgoingFile{Path: f.Path, Filename: f.Filename, MimeType: f.MimeType, Type: f.Type})
	}
	if _, err := reply.Final(ctx, text, files...); err != nil {
		return err
	}
	a.mu.Lock()
	a.answered[msg.MessageID] = true
	a.mu.Unlock()
	a.j.add(chaosRecord{Kind: "answered", ID: msg.MessageID})
	_ = reply.Activity(ctx, protocol.ActivityIdle, "")
	return nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
