package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xconn/xconn/store"
)

// Row names of the baselines.
const (
	nameWSEcho       = "baseline/ws-echo"
	nameSQLiteSingle = "baseline/sqlite-tx-per-op"
	nameSQLiteBatch  = "baseline/sqlite-batch-64"
	nameHTTPCopy     = "baseline/http-copy"
	nameDiskWrite    = "baseline/disk-write"
	namePGSingle     = "baseline/postgres-tx-per-op"
	namePGBatch      = "baseline/postgres-batch-64"
)

// env is what a scenario sees of the run: the results so far.
type env struct {
	results []Result
}

// find returns the row named name measured earlier in the run.
func (e *env) find(name string) (Result, bool) {
	for _, r := range e.results {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// Scenario is one entry of the registry: a named measurement that returns
// one or more rows. It is a value; Scenarios returns a fresh list.
type Scenario struct {
	// Name selects the scenario on the command line.
	Name string
	// Summary says what it measures.
	Summary string
	// Needs are the scenarios (baselines) that must run before it.
	Needs []string
	run   func(ctx context.Context, cfg Config, e *env) ([]Result, error)
}

// Scenarios returns the registry in run order.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "ws-echo", Summary: "baseline: raw coder/websocket echo of tool.invoke-sized frames, InFlight in flight", run: runWSEcho},
		{Name: "invoke", Summary: "tool.invoke -> tool.invoke.ack through host.Invoke and the SDK (and SDK alone over wsconn), InFlight in flight", Needs: []string{"ws-echo"}, run: runInvoke},
		{Name: "ping", Summary: "ping -> pong through the SDK over wsconn, InFlight in flight", Needs: []string{"ws-echo"}, run: runPing},
		{Name: "invoke-slow", Summary: "20 ms handler, 1/8/64 channels, InFlight in flight, a ping every 10 ms on the same socket", run: runInvokeSlow},
		{Name: "sqlite", Summary: "baseline: SQLite insert + delete per message, one transaction each, and batched by 64", run: runSQLite},
		{Name: "postgres", Summary: "baseline (with --store postgres://...): raw PostgreSQL insert + delete per message, one transaction each, and batched by 64", run: runPostgres},
		{Name: "rabbitmq", Summary: "baseline: RabbitMQ quorum queues, persistent messages, publisher confirms, manual acks, the chat load at each ChatChannels count (skipped when the broker does not answer)", run: rabbitBroker().scenario()},
		{Name: "jetstream", Summary: "baseline: NATS JetStream, file storage, work-queue retention, explicit acks, the chat load at each ChatChannels count (skipped when the server does not answer)", run: jetStreamBroker().scenario()},
		{Name: "inbound", Summary: "Channel.Publish -> host Agent -> accepted ack, durable on SQLite (or --store), at each ChatChannels count", Needs: []string{"sqlite", "postgres", "rabbitmq", "jetstream"}, run: runInbound},
		{Name: "outbound", Summary: "host ReplyStream.Final -> connector no-op target -> accepted ack, durable on SQLite (or --store), at each ChatChannels count", Needs: []string{"sqlite", "postgres", "rabbitmq", "jetstream"}, run: runOutbound},
		{Name: "latency", Summary: "one channel, one message at a time: p50/p99 from Channel.Publish to the Agent and from ReplyStream.Final to the target, next to the brokers' publish -> consume", run: runLatency},
		{Name: "channels", Summary: "open Channels channels on one socket; memory per channel; drop the socket and reopen them all", run: runChannels},
		{Name: "http-copy", Summary: "baseline: plain loopback HTTP io.Copy of FileSize bytes", run: runHTTPCopy},
		{Name: "disk-write", Summary: "baseline: write FileSize bytes to a file in the run's directory, median of FileRuns", run: runDiskWrite},
		{Name: "files", Summary: "upload (host -> connector) and download (connector -> host) of a FileSize file, median of FileRuns", Needs: []string{"http-copy", "disk-write"}, run: runFiles},
	}
}

// Names returns the scenario names in run order.
func Names() []string {
	var out []string
	for _, s := range Scenarios() {
		out = append(out, s.Name)
	}
	return out
}

// Run runs the named scenarios (all when names is empty) with the
// baselines they need, in registry order, and returns the report. A
// scenario that fails yields a row with Error set; Run itself fails only on
// an unknown name, a value of cfg no default stands for (a negative size,
// a channel count below one; the report is nil then) or a cancelled ctx. Run starts servers, clients and
// stores on loopback and stops every goroutine before it returns. It
// resets the process's peak-RSS mark, so run one Run at a time per process.
func Run(ctx context.Context, cfg Config, names ...string) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	all := Scenarios()
	want := map[string]bool{}
	var add func(n string) error
	add = func(n string) error {
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == n })
		if i < 0 {
			return fmt.Errorf("bench: unknown scenario %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		want[n] = true
		for _, d := range all[i].Needs {
			if err := add(d); err != nil {
				return err
			}
		}
		return nil
	}
	if len(names) == 0 {
		names = Names()
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, err
		}
	}
	rep := &Report{Started: time.Now().UTC(), GoMaxProcs: runtime.GOMAXPROCS(0), LoadAvg: []string{loadAvg()},
		SQLiteEngine: store.SQLiteEngine}
	e := &env{}
	for _, s := range all {
		if !want[s.Name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		cfg.logf("bench: %s ...", s.Name)
		resetPeakRSS()
		t := time.Now()
		rows, err := s.run(ctx, cfg, e)
		peak := peakRSS()
		if err != nil {
			rows = append(rows, Result{Name: s.Name, Error: err.Error()})
		}
		for i := range rows {
			if rows[i].PeakRSS == 0 {
				rows[i].PeakRSS = peak
			}
		}
		e.results = append(e.results, rows...)
		cfg.logf("bench: %s done in %v", s.Name, time.Since(t).Round(time.Millisecond))
	}
	for i := range e.results {
		r := &e.results[i]
		if r.Error != "" {
			continue
		}
		if r.Ratio == 0 && r.Baseline != "" {
			if b, ok := e.find(r.Baseline); ok && b.Rate > 0 {
				r.Ratio = r.Rate / b.Rate
			}
		}
		for _, name := range r.Also {
			if b, ok := e.find(name); ok && b.Rate > 0 {
				r.Extra = append(r.Extra, Metric{Name: "ratio_vs_" + name, Value: round2(r.Rate / b.Rate), Unit: "x"})
			}
		}
	}
	checkGoals(e)
	rep.Results = e.results
	rep.LoadAvg = append(rep.LoadAvg, loadAvg())
	return rep, nil
}
