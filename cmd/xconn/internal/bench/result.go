package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Metric is one extra figure of a Result (ping p99 during invoke-slow,
// bytes per channel, reopen time, ...).
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Text, when set, is a note printed instead of the value and unit
	// (a durability level, a goal's verdict).
	Text string `json:"text,omitempty"`
}

// Result is one row of the report: a scenario or a baseline. It is a value.
type Result struct {
	// Name is the row name ("invoke", "baseline/ws-echo", "invoke-slow/8").
	Name string `json:"name"`
	// Baseline is the row the Ratio is computed against ("" for none).
	Baseline string `json:"baseline,omitempty"`
	// Ops is the number of measured operations (round trips, messages,
	// channels, files).
	Ops int64 `json:"ops"`
	// Seconds is the measured wall time.
	Seconds float64 `json:"seconds"`
	// Rate is the throughput in Unit.
	Rate float64 `json:"rate"`
	// Unit of Rate: "op/s", "msg/s", "MiB/s", "ch/s".
	Unit string `json:"unit"`
	// P50 and P99 are per-operation latencies.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	// AllocsPerOp and BytesPerOp are heap allocations of the whole process
	// (both sides, client and server) divided by Ops.
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// PeakRSS is the process's peak resident set during the row's scenario.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// Also names further baselines the row is compared with; Run adds a
	// ratio_vs_<name> figure to Extra for each one that was measured.
	Also []string `json:"also_compared_with,omitempty"`
	// Ratio is Rate divided by the baseline's Rate (or by the ideal rate for
	// invoke-slow); 0 when there is no baseline.
	Ratio float64 `json:"ratio,omitempty"`
	// Goal is the target of the issue for this row, e.g. ">= 0.5".
	Goal string `json:"goal,omitempty"`
	// Extra holds further figures.
	Extra []Metric `json:"extra,omitempty"`
	// Error is set when the row could not be measured.
	Error string `json:"error,omitempty"`
	// Skipped says why a baseline row was not measured (its broker did
	// not answer); the rows compared with it have no ratio to it.
	Skipped string `json:"skipped,omitempty"`

	// checks are the goals that compare the row with other rows (see
	// checkGoals).
	checks []goalCheck
}

// Report is the outcome of one run, owned by the caller of Run. It is not
// safe for concurrent mutation.
type Report struct {
	Command    string    `json:"command,omitempty"`
	Started    time.Time `json:"started"`
	GoMaxProcs int       `json:"gomaxprocs"`
	// SQLiteEngine names the SQLite engine of the build (store.SQLiteEngine).
	SQLiteEngine string `json:"sqlite_engine"`
	// LoadAvg is /proc/loadavg at the start and at the end of the run:
	// other processes on the machine skew every figure.
	LoadAvg []string `json:"loadavg,omitempty"`
	Results []Result `json:"results"`
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	return nil
}

// WriteTable writes r as an aligned text table, then one line per extra
// figure and error.
func (r *Report) WriteTable(w io.Writer) error {
	if r.Command != "" {
		fmt.Fprintf(w, "command: %s\n", r.Command)
	}
	fmt.Fprintf(w, "started %s, GOMAXPROCS %d, load average %s, SQLite engine %s\n", r.Started.Format(time.RFC3339), r.GoMaxProcs, strings.Join(r.LoadAvg, " -> "), r.SQLiteEngine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tops\trate\tunit\tp50\tp99\tallocs/op\tB/op\tpeak RSS\tratio\tgoal\tbaseline\t")
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\tERROR\t\n", x.Name, x.Goal)
			continue
		}
		if x.Skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\tSKIPPED\t\n", x.Name)
			continue
		}
		ratio := "-"
		if x.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", x.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n",
			x.Name, x.Ops, fmtRate(x.Rate), x.Unit, fmtDur(x.P50), fmtDur(x.P99),
			x.AllocsPerOp, fmtBytes(x.BytesPerOp), fmtBytes(float64(x.PeakRSS)), ratio, dash(x.Goal), dash(x.Baseline))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("bench: write table: %w", err)
	}
	for _, x := range r.Results {
		for _, m := range x.Extra {
			if m.Text != "" {
				fmt.Fprintf(w, "  %s: %s: %s\n", x.Name, m.Name, m.Text)
				continue
			}
			fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %s: %s = %s %s", x.Name, m.Name, fmtRate(m.Value), m.Unit), " "))
		}
		if x.Error != "" {
			fmt.Fprintf(w, "  %s: error: %s\n", x.Name, x.Error)
		}
		if x.Skipped != "" {
			fmt.Fprintf(w, "  %s: skipped: %s\n", x.Name, x.Skipped)
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func fmtBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f%s", v, units[i])
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + units[i]
}
