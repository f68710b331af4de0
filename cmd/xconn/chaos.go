package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/cmd/xconn/internal/chaos"
	"github.com/xconn/xconn/store"
)

// Defaults of "xconn chaos".
const (
	chaosDefaultDuration  = 2 * time.Minute
	chaosDefaultRooms     = 2
	chaosDefaultOutboxTTL = 20 * time.Second
	chaosDefaultLeaseTTL  = 4 * time.Second
	// chaosStartSlack is what a takeover may take beyond the lease bound
	// (1.25×--lease-ttl): the standby opening the store and starting the
	// connector on a loaded machine.
	chaosStartSlack = 15 * time.Second
	// chaosDrainTimeout bounds the drain after the last fault.
	chaosDrainTimeout = 3 * time.Minute
	// chaosQuiesceEvery is the number of faults between resource samples.
	chaosQuiesceEvery = 3
	// chaosSoakCycles is the number of identical drop cycles at the end;
	// a process sampled in chaosMinSoak of them must not grow with each.
	chaosSoakCycles = 6
	chaosMinSoak    = 4
	// Growth tolerated between the first and the last sample of a process.
	chaosGoroutineSlack = 40
	chaosFDSlack        = 24
	chaosOutboxQueue    = "connector.im.v2"
)

type chaosFlags struct {
	duration  time.Duration
	json      bool
	storeDSN  string
	seed      uint64
	rooms     int
	gap       time.Duration
	fileEvery int
	toolEvery time.Duration
	outboxTTL time.Duration
	leaseTTL  time.Duration
	minFault  time.Duration
	maxFault  time.Duration
	keep      bool
	faults    []string
}

// chaosAllFaults are the faults of a run, in the order --faults lists them.
var chaosAllFaults = []chaos.Fault{chaos.KillConnector, chaos.KillHost, chaos.Drop, chaos.Stall, chaos.HalfClose,
	chaos.NewConnectorID, chaos.SlowConsumer, chaos.HostOutage}

func newChaosCmd() *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run the web chat connector and a host under injected faults and check the delivery invariants",
		Long: `Run the web chat connector ("xconn serve webchat") and a host (an embedded xAgent
host with an echo agent: "xconn chaos host-child") as separate processes of this
binary, with traffic both ways through a loopback TCP proxy: browsers post
messages (some with a file) to rooms through the web chat's HTTP API and read
its event stream; the host answers each with a streamed echo and makes
side-effecting webchat_message_send calls, retrying each call id until it has a
result. At random instants (seeded: the seed is printed, --seed replays the
same decisions) it injects: SIGKILL of the connector or of the host, dropped
connections, stalls, half-closes, a host restart with a new connector_id, slow
consumers, and a host outage longer than --outbox-ttl (messages posted then
expire). Every few faults it pauses the browsers, waits for quiescence and
samples each child's descriptors (/proc/PID/fd) and goroutines (go_goroutines
of its /metrics); after the faults and a drain, six soak cycles drop every
connection and sample again: no child may grow with every cycle.

With --store postgres://... two connector processes share the database (each
run in a schema of its own, dropped at the end unless --keep): one active by
lease (--lease-ttl), the other a hot standby; killing the connector kills the
active one, and the standby must take over within 1.25×--lease-ttl plus 15 s
of start-up.

Invariants: every inbound message that did not expire is accepted exactly
once (one "accepted" chat.message.ack) and in per-room order; every accepted
message gets exactly one reply on the page, with its file when it had one
(fetched from the page and compared with the file sent);
every tool call id executes once (one page message) and returns one result;
messages reported expired (the connector's outbox outcome) were never
accepted; no child grows in goroutines or descriptors across quiescent
points; no canary secret (the API key, the room's access code, a secret form
field) appears in a log line, in a byte the proxy forwards back to a
client, or in an HTTP response a browser reads.

The run ends with one line:
  invariants: sent=N accepted=N lost=N duplicated=N expired=N faults=N leaks=N
sent counts messages the connector queued; lost counts messages neither
accepted nor expired, replies and tool calls never seen, and expired reports
of accepted messages; duplicated counts extra accepts, replies and
executions; leaks counts canaries found and processes that grew. Broken
invariants no count covers (order, a reply's file content as fetched from
the page, a takeover past its bound, a child exiting by itself) are listed
before the line, like every finding, and make the exit status 1. With --json
the progress goes to stderr and stdout holds one JSON object instead:
{"seed","sent","accepted","lost","duplicated","expired","faults","leaks",
"finals","tool_calls","problems","by_fault","details","extra","ok"}.
Exit status: 0 when every invariant held, 1 when one broke, 2 on a usage
error.`,
		Example: `  xconn chaos --duration 2m
  xconn chaos --duration 30m --seed 42 --json
  xconn chaos --store postgres://postgres@127.0.0.1:5432/test?sslmode=disable`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			return runChaos(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.duration, "duration", chaosDefaultDuration, "how long faults are injected (a drain follows)")
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON object on stdout (progress on stderr)")
	fs.StringVar(&f.storeDSN, "store", "", `connector store: "" for SQLite in the work directory, or "postgres://..." for two connectors with failover`)
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the fault schedule (0: random, printed)")
	fs.IntVar(&f.rooms, "rooms", chaosDefaultRooms, "web chat rooms (channels), each with one browser")
	fs.DurationVar(&f.gap, "message-gap", 300*time.Millisecond, "pause between two messages of one browser")
	fs.IntVar(&f.fileEvery, "file-every", 4, "every Nth message carries a file (0: none)")
	fs.DurationVar(&f.toolEvery, "tool-every", 2*time.Second, "pause between two tool calls of the host per room")
	fs.DurationVar(&f.outboxTTL, "outbox-ttl", chaosDefaultOutboxTTL, "the connector's --outbox-ttl (a host outage lasts longer)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", chaosDefaultLeaseTTL, "the connectors' --lease-ttl with --store postgres://...")
	fs.DurationVar(&f.minFault, "min-gap", 2*time.Second, "shortest pause between two faults")
	fs.DurationVar(&f.maxFault, "max-gap", 8*time.Second, "longest pause between two faults")
	fs.BoolVar(&f.keep, "keep", false, "keep the work directory (the children's logs, the host's journal.jsonl, the browsers' browsers.log; kept anyway when an invariant broke) and the PostgreSQL schema")
	fs.StringSliceVar(&f.faults, "faults", nil, "inject only these faults (default all): kill-connector, kill-host, drop, stall, half-close, new-connector-id, slow-consumer, host-outage")
	cmd.AddCommand(newChaosHostCmd())
	return cmd
}

func (f *chaosFlags) check() error {
	switch {
	case f.duration <= 0:
		return errors.New("--duration must be positive")
	case f.rooms < 1 || f.rooms > 16:
		return errors.New("--rooms must be between 1 and 16")
	case f.gap <= 0 || f.minFault <= 0 || f.maxFault < f.minFault:
		return errors.New("--message-gap and --min-gap must be positive, --max-gap at least --min-gap")
	case f.outboxTTL < 2*time.Second:
		return errors.New("--outbox-ttl must be at least 2s")
	case f.leaseTTL < time.Second:
		return errors.New("--lease-ttl must be at least 1s")
	case len(f.kinds()) == 0:
		return fmt.Errorf("--faults: none of %v is a fault", f.faults)
	case f.storeDSN != "" && !strings.HasPrefix(f.storeDSN, "postgres://") && !strings.HasPrefix(f.storeDSN, "postgresql://"):
		return errors.New(`--store must be "postgres://..." (SQLite is the default)`)
	}
	return nil
}

// kinds returns the faults to inject: --faults, or all.
func (f *chaosFlags) kinds() []chaos.Fault {
	if len(f.faults) == 0 {
		return chaosAllFaults
	}
	var out []chaos.Fault
	for _, k := range chaosAllFaults {
		for _, name := range f.faults {
			if string(k) == strings.TrimSpace(name) {
				out = append(out, k)
			}
		}
	}
	if len(out) != len(f.faults) {
		return nil
	}
	return out
}

// chaosRun is one run: its children, proxies, browsers and checker. run
// owns it: one goroutine injects the faults (sched and the children's
// restarts are its own); the journal tailer, the expiry watcher and the
// browsers run beside it and share only the fields under mu, the checker,
// the scanner and paused, which are safe for concurrent use.
type chaosRun struct {
	f      chaosFlags
	exe    string
	work   string
	nonce  string
	apiKey string
	code   string
	dsn    string // connector store DSN ("" = SQLite in the work dir)
	out    io.Writer
	start  time.Time

	scan  *chaos.Scanner
	chk   *chaos.Checker
	sched *chaos.Schedule
	proxy *chaos.Proxy // data plane and host HTTP
	web   *chaos.Proxy // browsers
	conns []*chaosProc // one (SQLite) or two (PostgreSQL) connectors
	ports []string
	host  *chaosProc

	paused   atomic.Bool
	browsers []*chaosBrowser

	mu          sync.Mutex
	channels    map[string]string // room → connector_channel_id
	ready       map[string]bool
	hostMetrics string
	samples     map[int][]chaosSample // by pid
	quiesced    int
	soaking     bool // samples are of the soak cycles
	takeovers   []time.Duration
	leaseLosses int // active connectors that lost their lease (fencing exits)
}

// chaosSample is a resource sample of a child at a quiescent point.
type chaosSample struct {
	soak       bool
	name       string
	fds        int
	goroutines int
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func runChaos(ctx context.Context, stdout, stderr io.Writer, f chaosFlags) error {
	out := stdout
	if f.json {
		out = stderr
	}
	if f.seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		f.seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	exe, err := os.Executable()
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("find the xconn binary: %w", err)}
	}
	work, err := os.MkdirTemp("", "xconn-chaos-")
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	r := &chaosRun{f: f, exe: exe, work: work, nonce: randomHex(3), out: out, start: time.Now(),
		apiKey: "chaosKEY" + randomHex(16), code: "chaosCODE" + randomHex(12),
		chk: chaos.NewChecker(), channels: map[string]string{}, ready: map[string]bool{}, samples: map[int][]chaosSample{}}
	r.scan = chaos.NewScanner(map[string]string{"api_key": r.apiKey, "access_code": r.code})
	r.sched = chaos.NewSchedule(f.seed, f.minFault, f.maxFault, f.kinds())
	fmt.Fprintf(out, "chaos: seed %d (replay with --seed %d), duration %s, work directory %s\n", f.seed, f.seed, f.duration, work)
	res, runErr := r.run(ctx)
	if !f.keep && runErr == nil && res.OK {
		_ = os.RemoveAll(work)
	}
	if runErr != nil {
		return &exitError{code: 1, err: runErr}
	}
	fmt.Fprintf(out, "chaos: %d replies and %d tool calls checked, %d quiescent samples", res.Finals, res.ToolCalls, res.Extra["quiescent_samples"])
	if n, ok := res.Extra["takeovers"]; ok {
		fmt.Fprintf(out, ", %d takeovers (worst %d ms, bound %d ms)", n, res.Extra["worst_takeover_ms"], res.Extra["takeover_bound_ms"])
	}
	fmt.Fprintln(out)
	if f.json {
		fmt.Fprintln(stdout, res.JSON())
	} else {
		for _, d := range res.Details {
			fmt.Fprintf(out, "  %s\n", d)
		}
		fmt.Fprintln(stdout, res.Line())
	}
	if !res.OK {
		return &exitError{code: 1}
	}
	return nil
}

// logf prints one progress line with the run's elapsed time.
func (r *chaosRun) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "chaos: %6.1fs "+format+"\n", append([]any{time.Since(r.start).Seconds()}, args...)...)
}

func (r *chaosRun) run(ctx context.Context) (chaos.Result, error) {
	if r.f.storeDSN != "" {
		dsn, drop, err := chaosSchema(ctx, r.f.storeDSN, "xconn_chaos_"+r.nonce)
		if err != nil {
			return chaos.Result{}, err
		}
		if !r.f.keep {
			defer drop()
		}
		r.dsn = dsn
	}
	n := 1
	if r.dsn != "" {
		n = 2
	}
	for range n {
		port, err := freePort()
		if err != nil {
			return chaos.Result{}, err
		}
		r.ports = append(r.ports, port)
	}
	upstreams := func() []string {
		out := make([]string, len(r.ports))
		for i, p := range r.ports {
			out[i] = "127.0.0.1:" + p
		}
		return out
	}
	var err error
	if r.proxy, err = chaos.Listen("127.0.0.1:0", chaos.ProxyOptions{Upstreams: upstreams, Scanner: r.scan, Name: "proxy"}); err != nil {
		return chaos.Result{}, err
	}
	defer r.proxy.Close()
	if r.web, err = chaos.Listen("127.0.0.1:0", chaos.ProxyOptions{Upstreams: upstreams, Scanner: r.scan, Name: "web proxy"}); err != nil {
		return chaos.Result{}, err
	}
	defer r.web.Close()

	for i := range n {
		r.conns = append(r.conns, r.connectorProc(i))
	}
	r.host = r.hostProc()
	defer r.stopAll()

	if err := r.conns[0].start(); err != nil {
		return chaos.Result{}, err
	}
	if !r.waitHealthy(ctx, 0, 60*time.Second) {
		return chaos.Result{}, errors.New("the connector did not become healthy within 60s")
	}
	if n == 2 {
		if err := r.conns[1].start(); err != nil {
			return chaos.Result{}, err
		}
	}
	if err := r.host.start(); err != nil {
		return chaos.Result{}, err
	}

	bctx, bcancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { bcancel(); bg.Wait() }()
	bg.Add(1)
	go func() { defer bg.Done(); r.tailJournal(bctx) }()
	rooms := make([]string, r.f.rooms)
	for i := range rooms {
		rooms[i] = fmt.Sprintf("chaos-%s-%d", r.nonce, i+1)
	}
	if !r.waitReady(ctx, rooms, 90*time.Second) {
		return chaos.Result{}, errors.New("the host did not sign in to the rooms within 90s")
	}
	var dbOnce sync.Once
	var obs *store.DB
	openObs := func() {
		dbOnce.Do(func() {
			dsn := r.dsn
			if dsn == "" {
				dsn = "sqlite:" + filepath.Join(r.work, "conn", "webchat.db")
			}
			obs, _ = store.Open(ctx, dsn, store.Options{DataDir: filepath.Join(r.work, "conn")})
		})
	}
	openObs()
	if obs != nil {
		defer obs.Close()
		bg.Add(1)
		go func() { defer bg.Done(); r.watchExpired(bctx, obs) }()
	}

	tf, err := os.OpenFile(filepath.Join(r.work, "browsers.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return chaos.Result{}, err
	}
	defer tf.Close()
	trace := &lockedWriter{w: tf}
	sendCtx, stopSend := context.WithCancel(bctx)
	var senders sync.WaitGroup
	for _, room := range rooms {
		b := newChaosBrowser("http://"+r.web.Addr(), room, r.code, r.nonce, r.scan, r.chk, trace)
		if err := b.enter(ctx); err != nil {
			stopSend()
			return chaos.Result{}, err
		}
		r.browsers = append(r.browsers, b)
		bg.Add(1)
		go func() { defer bg.Done(); b.events(bctx) }()
		senders.Add(1)
		go func() { defer senders.Done(); b.send(sendCtx, r.f.gap, r.paused.Load, r.f.fileEvery) }()
	}
	r.logf("running: %d room(s), host %s, connector(s) on %s", len(rooms), r.proxy.Addr(), strings.Join(r.ports, ","))

	// Faults.
	end := time.Now().Add(r.f.duration)
	faults := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		gap, fault := r.sched.Next()
		if !sleepCtx(ctx, min(gap, time.Until(end))) || time.Now().After(end) {
			break
		}
		r.ensureRunning()
		r.inject(ctx, fault)
		faults++
		if faults%chaosQuiesceEvery == 0 {
			r.quiesce(ctx, obs, false)
		}
	}
	stopSend()
	senders.Wait()
	r.logf("faults over; draining")
	r.ensureRunning()
	if !r.quiesce(ctx, obs, true) {
		// What is still pending is counted as lost; drop cycles that
		// cannot quiesce either would only add minutes.
		r.logf("drain: still pending after %s; soak skipped", chaosDrainTimeout)
	} else {
		r.logf("soak: %d drop cycles", chaosSoakCycles)
		r.soak(ctx, obs, chaosSoakCycles)
	}
	if obs != nil {
		r.refreshExpired(ctx, obs)
	}
	if ctx.Err() != nil {
		return chaos.Result{}, ctx.Err()
	}
	// No new tool call from here on; the ones in flight finish first. A
	// call the host began just before the pause file appeared is in the
	// journal within microseconds, and read from it within the tailer's
	// 100 ms: wait that out before asking what is pending (a 30-minute run
	// stopped with a call started 20 ms before, and counted it lost).
	_ = os.WriteFile(r.pauseFile(), nil, 0o600)
	sleepCtx(ctx, time.Second)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if _, _, tools := r.chk.Pending(); tools == 0 {
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	r.stopAll()
	r.checkGrowth()
	for _, l := range r.scan.Leaks() {
		r.chk.Leak(fmt.Sprintf("canary %s in %s", l.Canary, l.Where))
	}
	res := r.chk.Result()
	res.Seed = r.f.seed
	r.mu.Lock()
	res.Extra = map[string]any{"quiescent_samples": r.quiesced, "duration_s": int(r.f.duration.Seconds())}
	if r.leaseLosses > 0 {
		res.Extra["lease_losses"] = r.leaseLosses
	}
	if len(r.takeovers) > 0 {
		var worst time.Duration
		for _, d := range r.takeovers {
			worst = max(worst, d)
		}
		res.Extra["takeovers"] = len(r.takeovers)
		res.Extra["worst_takeover_ms"] = worst.Milliseconds()
		res.Extra["takeover_bound_ms"] = (r.f.leaseTTL*5/4 + chaosStartSlack).Milliseconds()
	}
	r.mu.Unlock()
	var posted int64
	for _, b := range r.browsers {
		posted += b.posted.Load()
	}
	res.Extra["posted"] = posted
	return res, nil
}

// chaosSchema creates a fresh schema in the PostgreSQL database of dsn and
// returns a DSN that uses it, with a function dropping it.
func chaosSchema(ctx context.Context, dsn, schema string) (string, func(), error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		db.Close()
		return "", nil, fmt.Errorf("postgres DSN: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db.Close()
	}, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

func (r *chaosRun) connectorProc(i int) *chaosProc {
	args := []string{"serve", "webchat", "--listen", "127.0.0.1:" + r.ports[i], "--data", filepath.Join(r.work, "conn"),
		"--public-url", "http://" + r.web.Addr(), "--outbox-ttl", r.f.outboxTTL.String()}
	if r.dsn != "" {
		args = append(args, "--store", r.dsn, "--lease-ttl", r.f.leaseTTL.String())
	}
	return newChaosProc(fmt.Sprintf("connector-%c", 'a'+i), r.exe, args, []string{"XCONN_API_KEY=" + r.apiKey},
		filepath.Join(r.work, fmt.Sprintf("connector-%c.log", 'a'+i)), r.scan)
}

func (r *chaosRun) hostProc() *chaosProc {
	rooms := make([]string, r.f.rooms)
	for i := range rooms {
		rooms[i] = fmt.Sprintf("chaos-%s-%d", r.nonce, i+1)
	}
	args := []string{"chaos", "host-child", "http://" + r.proxy.Addr(), "--data", filepath.Join(r.work, "host"),
		"--journal", filepath.Join(r.work, "journal.jsonl"), "--rooms", strings.Join(rooms, ","), "--tool-every", r.f.toolEvery.String(), "--pause-file", r.pauseFile()}
	return newChaosProc("host", r.exe, args, []string{"XCONN_API_KEY=" + r.apiKey, envChaosAccessCode + "=" + r.code},
		filepath.Join(r.work, "host.log"), r.scan)
}

// healthy reports whether connector i answers /health.
func (r *chaosRun) healthy(i int) bool {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+r.ports[i]+"/health", nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r.scan.Scan("health response", body)
	return resp.StatusCode == http.StatusOK
}

func (r *chaosRun) waitHealthy(ctx context.Context, i int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if r.healthy(i) {
			return true
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return false
}

// active returns the index of the connector that serves (-1: none).
func (r *chaosRun) active() int {
	for i := range r.conns {
		if r.conns[i].running() && r.healthy(i) {
			return i
		}
	}
	return -1
}

func (r *chaosRun) waitReady(ctx context.Context, rooms []string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := 0
		for _, room := range rooms {
			if r.ready[room] {
				n++
			}
		}
		r.mu.Unlock()
		if n == len(rooms) {
			return true
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return false
}

// pauseFile is the file whose existence pauses the host's tool calls.
func (r *chaosRun) pauseFile() string { return filepath.Join(r.work, "pause") }

// stopAll ends every child (SIGTERM, then SIGKILL after 15 s).
func (r *chaosRun) stopAll() {
	for _, p := range append(append([]*chaosProc(nil), r.conns...), r.host) {
		if p != nil {
			p.term(15 * time.Second)
		}
	}
}
