package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tinyConfig runs every scenario in seconds.
func tinyConfig(t *testing.T) Config {
	return Config{Duration: 150 * time.Millisecond, Warmup: 30 * time.Millisecond, InFlight: 4,
		Channels: 40, HostChannels: 10, FileSize: 1 << 20, SlowChannels: []int{1, 2},
		HandlerLatency: 2 * time.Millisecond, PingInterval: 5 * time.Millisecond, ChatChannels: []int{1, 2}, FileRuns: 2,
		Dir: t.TempDir()}
}

// TestRunEveryScenario runs the whole registry once with tiny sizes so that
// the harness keeps working; it checks structure, never speed.
func TestRunEveryScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, tinyConfig(t))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{nameWSEcho, "invoke", "invoke-sdk", "ping", "invoke-slow/1", "invoke-slow/2",
		nameSQLiteSingle, nameSQLiteBatch, "inbound/1", "inbound/2", "outbound/1", "outbound/2", nameLatencyIn, nameLatencyOut,
		nameLatencyIn + nameBackToBack, nameLatencyOut + nameBackToBack,
		"channels-sdk", "channels-host", nameHTTPCopy, nameDiskWrite, "files-upload", "files-download"}
	var got []string
	brokers := map[string][]string{}
	for _, r := range rep.Results {
		if b := brokerOf(r.Name); b != "" {
			// Measured at each channel count and for the latency, or
			// skipped once per scenario when the broker is not there.
			brokers[b] = append(brokers[b], r.Name)
			if r.Skipped != "" {
				t.Logf("%s skipped: %s", r.Name, r.Skipped)
				continue
			}
		} else {
			got = append(got, r.Name)
		}
		if r.Error != "" {
			t.Errorf("%s: %s", r.Name, r.Error)
			continue
		}
		if r.Ops <= 0 || r.Rate <= 0 {
			t.Errorf("%s: ops %d rate %v, want > 0", r.Name, r.Ops, r.Rate)
		}
		if r.Baseline != "" && r.Ratio <= 0 {
			t.Errorf("%s: baseline %s but no ratio", r.Name, r.Baseline)
		}
		if r.PeakRSS <= 0 {
			t.Errorf("%s: peak RSS %d", r.Name, r.PeakRSS)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows = %v\nwant %v", got, want)
	}
	for _, b := range []string{nameRabbitMQ, nameJetStream} {
		rows := brokers[b]
		measured := []string{b + "/1", b + "/2", b + "/latency", b + "/latency" + nameBackToBack}
		skipped := []string{b, b + "/latency", b + "/latency" + nameBackToBack}
		if !slices.Equal(rows, measured) && !slices.Equal(rows, skipped) {
			t.Errorf("%s rows = %v, want %v or, skipped, %v", b, rows, measured, skipped)
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, n := range want {
		if !strings.Contains(table.String(), n) {
			t.Errorf("table lacks %s:\n%s", n, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report does not decode: %v", err)
	}
	if len(back.Results) != len(rep.Results) || back.Results[1].Ratio != rep.Results[1].Ratio {
		t.Errorf("JSON round trip changed the report")
	}
}

// TestChatOnPostgres runs inbound and outbound on PostgreSQL next to the
// raw PostgreSQL baselines (skipped without XCONN_TEST_POSTGRES).
func TestChatOnPostgres(t *testing.T) {
	dsn := os.Getenv("XCONN_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("XCONN_TEST_POSTGRES is not set; the PostgreSQL bench rows are not run")
	}
	cfg := tinyConfig(t)
	cfg.Store, cfg.ChatChannels = dsn, []int{3}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg, "inbound", "outbound")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	for _, r := range rep.Results {
		if brokerOf(r.Name) != "" {
			continue // measured or skipped: TestRunEveryScenario checks them
		}
		names = append(names, r.Name)
		if r.Error != "" {
			t.Errorf("%s: %s", r.Name, r.Error)
		}
		if strings.HasPrefix(r.Name, "inbound") || strings.HasPrefix(r.Name, "outbound") {
			if r.Baseline != namePGBatch || r.Ratio <= 0 || r.Ops <= 0 {
				t.Errorf("%s: baseline %q ratio %v ops %d, want a ratio to %s", r.Name, r.Baseline, r.Ratio, r.Ops, namePGBatch)
			}
		}
	}
	want := []string{nameSQLiteSingle, nameSQLiteBatch, namePGSingle, namePGBatch, "inbound/3", "outbound/3"}
	if !slices.Equal(names, want) {
		t.Fatalf("rows = %v, want %v", names, want)
	}
}

// brokerOf returns the broker baseline a row belongs to, "" for others.
func brokerOf(name string) string {
	for _, b := range []string{nameRabbitMQ, nameJetStream} {
		if name == b || strings.HasPrefix(name, b+"/") {
			return b
		}
	}
	return ""
}

// TestBrokerNotAnsweringIsSkipped: a broker that does not answer yields
// one skipped row per scenario that says why, and no error; the chat rows
// then have no ratio to it and say that their goal was not checked.
func TestBrokerNotAnsweringIsSkipped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := tinyConfig(t)
	cfg.RabbitMQURL, cfg.NATSURL = "amqp://guest:secret@"+addr+"/", "nats://"+addr
	cfg.ChatChannels = []int{64}
	cfg.Duration, cfg.Warmup = 50*time.Millisecond, 10*time.Millisecond
	rep, err := Run(context.Background(), cfg, "inbound")
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	for _, want := range []string{nameRabbitMQ + ": skipped: RabbitMQ at amqp://guest:xxxxx@" + addr,
		nameJetStream + ": skipped: NATS at nats://" + addr,
		"inbound/64: goal: vs " + nameRabbitMQ + "/64: not checked"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("report shows the broker password:\n%s", out)
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Errorf("%s: error %s", r.Name, r.Error)
		}
		if r.Name == "inbound/64" && r.Ratio != 0 {
			t.Errorf("inbound/64 has a ratio %v to a skipped baseline", r.Ratio)
		}
	}
}

func TestRunSelectsBaselines(t *testing.T) {
	cfg := tinyConfig(t)
	rep, err := Run(context.Background(), cfg, "ping")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{nameWSEcho, "ping"}) {
		t.Errorf("rows = %v, want the ws-echo baseline then ping", names)
	}
	if _, err := Run(context.Background(), cfg, "nope"); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Errorf("unknown scenario: err = %v", err)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
	}{
		{"small exact", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"microseconds", spread(1000, time.Microsecond, 5*time.Millisecond)},
		{"wide", spread(5000, 10*time.Microsecond, 3*time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			for _, s := range tc.samples {
				h.Record(s)
			}
			sorted := slices.Clone(tc.samples)
			slices.Sort(sorted)
			for _, q := range []float64{0.5, 0.9, 0.99, 1} {
				exact := sorted[max(0, int(q*float64(len(sorted))+0.5)-1)]
				got := h.Quantile(q)
				if diff := float64(got-exact) / float64(exact); diff < -0.04 || diff > 0.04 {
					t.Errorf("q%.2f = %v, exact %v (error %.1f%%)", q, got, exact, 100*diff)
				}
			}
			if h.Count() != uint64(len(tc.samples)) {
				t.Errorf("count = %d", h.Count())
			}
		})
	}
	var empty Histogram
	if empty.Quantile(0.99) != 0 {
		t.Error("empty histogram has a quantile")
	}
}

func spread(n int, lo, hi time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = lo + time.Duration(r.Int64N(int64(hi-lo)))
	}
	return out
}

func TestHistogramMerge(t *testing.T) {
	var a, b Histogram
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Millisecond)
		b.Record(time.Duration(100+i) * time.Millisecond)
	}
	a.Merge(&b)
	if a.Count() != 200 {
		t.Fatalf("count = %d", a.Count())
	}
	if p50 := a.Quantile(0.5); p50 < 97*time.Millisecond || p50 > 103*time.Millisecond {
		t.Errorf("p50 = %v, want about 100ms", p50)
	}
}

// ExampleRun measures the SDK's ping next to the raw WebSocket echo it is
// compared with, and prints the table.
func ExampleRun() {
	rep, err := Run(context.Background(), Config{Duration: time.Second}, "ping")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = rep.WriteTable(os.Stdout)
}

// TestInvokeTailLinesAndTrace checks that invoke reports its open-loop
// tail next to the raw echo's at the same rate, and that Config.Trace
// receives a runtime execution trace of that phase.
func TestInvokeTailLinesAndTrace(t *testing.T) {
	cfg := tinyConfig(t)
	var tr bytes.Buffer
	cfg.Trace = &tr
	rep, err := Run(context.Background(), cfg, "invoke")
	if err != nil {
		t.Fatal(err)
	}
	var inv *Result
	for i := range rep.Results {
		if rep.Results[i].Name == "invoke" {
			inv = &rep.Results[i]
		}
	}
	if inv == nil {
		t.Fatalf("no invoke row in %+v", rep.Results)
	}
	got := map[string]float64{}
	for _, m := range inv.Extra {
		got[m.Name] = m.Value
	}
	for _, name := range []string{"p50_at_half_peak", "p99_at_half_peak", "p99_at_half_peak_generator_lag", "p99_at_half_peak_service",
		"p50_at_half_peak_raw_echo", "p99_at_half_peak_raw_echo", "p99_at_half_peak_raw_echo_generator_lag", "p99_at_half_peak_raw_echo_service"} {
		if v, ok := got[name]; !ok || v <= 0 {
			t.Errorf("invoke: %s = %v (present %v), want > 0", name, v, ok)
		}
	}
	// A runtime/trace file starts with "go 1.NN trace".
	if !bytes.HasPrefix(tr.Bytes(), []byte("go 1.")) || tr.Len() < 1024 {
		t.Errorf("trace: %d bytes starting %q, want a runtime execution trace", tr.Len(), tr.Bytes()[:min(tr.Len(), 16)])
	}
}
