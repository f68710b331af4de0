package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xconn/xconn/cmd/xconn/internal/bench"
)

// newBenchCmd returns "xconn bench": the in-process benchmark of the
// connector SDK and the host against baselines measured in the same run.
func newBenchCmd() *cobra.Command {
	var (
		scenarios []string
		cfg       bench.Config
		asJSON    bool
		quiet     bool
		cpuProf   string
		memProf   string
		tracePath string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure xconn in one process over loopback against raw WebSocket, SQLite and HTTP baselines",
		Long: `Run the benchmark scenarios of xconn in this process over loopback, each next to
the baseline it is compared with (raw coder/websocket echo, plain SQLite
transactions, plain HTTP io.Copy, and RabbitMQ and NATS JetStream carrying
the chat load when they answer), and print throughput, p50/p99 latency,
allocations per operation, peak RSS and the ratio to the baseline.

Scenarios: ` + strings.Join(bench.Names(), ", ") + `.
With default flags the whole run takes under three minutes on two cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Progress = cmd.ErrOrStderr()
			}
			for _, e := range []struct {
				flag, env string
				v         *string
			}{{"rabbitmq-url", "XCONN_BENCH_RABBITMQ_URL", &cfg.RabbitMQURL}, {"nats-url", "XCONN_BENCH_NATS_URL", &cfg.NATSURL}} {
				if v := os.Getenv(e.env); v != "" && !cmd.Flags().Changed(e.flag) {
					*e.v = v
				}
			}
			if cpuProf != "" {
				stop, err := startCPUProfile(cpuProf)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				defer stop()
			}
			if memProf != "" {
				stop, err := startMemProfile(memProf)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				defer stop()
			}
			if tracePath != "" && len(scenarios) > 0 && !slices.Contains(scenarios, "invoke") {
				return errors.New("--trace traces the invoke scenario, and --scenario does not select it")
			}
			if tracePath != "" {
				f, err := os.Create(tracePath)
				if err != nil {
					return &exitError{code: 1, err: fmt.Errorf("trace: %w", err)}
				}
				defer f.Close()
				cfg.Trace = f
			}
			rep, err := bench.Run(cmd.Context(), cfg, scenarios...)
			if err != nil {
				if rep == nil {
					return err // unknown scenario: a usage error
				}
				return &exitError{code: 1, err: err}
			}
			rep.Command = "xconn " + strings.Join(redactArgs(os.Args[1:]), " ")
			out := cmd.OutOrStdout()
			if asJSON {
				err = rep.WriteJSON(out)
			} else {
				err = rep.WriteTable(out)
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			for _, r := range rep.Results {
				if r.Error != "" {
					return &exitError{code: 1, err: fmt.Errorf("scenario %s failed: %s", r.Name, r.Error)}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&scenarios, "scenario", nil, "scenario to run (repeatable; default all): "+strings.Join(bench.Names(), ", "))
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultDuration, "measured time of each throughput scenario")
	f.DurationVar(&cfg.Warmup, "warmup", bench.DefaultWarmup, "unmeasured warm-up before each measurement")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.IntVar(&cfg.InFlight, "inflight", bench.DefaultInFlight, "requests in flight for invoke, ping and the echo baseline")
	f.IntVar(&cfg.InvokeChannels, "invoke-channels", bench.DefaultInvokeChannels, "channels the invoke scenario spreads its calls over")
	f.IntVar(&cfg.MessageSize, "message-size", bench.DefaultMessageSize, "text bytes of tool arguments and chat messages")
	f.IntVar(&cfg.Channels, "channels", bench.DefaultChannels, "channels opened by the channels scenario")
	f.Int64Var(&cfg.FileSize, "file-size", bench.DefaultFileSize, "bytes moved each way by the files scenario")
	f.IntSliceVar(&cfg.ChatChannels, "chat-channels", bench.DefaultChatChannels(), "channel counts the inbound and outbound messages are spread over, one row each (comma-separated)")
	f.StringVar(&cfg.Store, "store", "", "store of inbound and outbound: a postgres://... DSN runs them on PostgreSQL (a schema per side, dropped at the end) next to raw PostgreSQL baselines; default one SQLite file per side")
	// The broker URLs may carry a password: the environment's value is
	// applied after parsing, so that --help never prints it.
	f.StringVar(&cfg.RabbitMQURL, "rabbitmq-url", bench.DefaultRabbitMQURL, "AMQP URL of the RabbitMQ broker of the baseline/rabbitmq-quorum rows, skipped when it does not answer (env XCONN_BENCH_RABBITMQ_URL)")
	f.StringVar(&cfg.NATSURL, "nats-url", bench.DefaultNATSURL, "URL of the NATS server (JetStream on) of the baseline/jetstream-file rows, skipped when it does not answer (env XCONN_BENCH_NATS_URL)")
	f.IntVar(&cfg.FileRuns, "file-runs", bench.DefaultFileRuns, "transfers each way of the files scenario and writes of its disk baseline; the median is reported")
	f.BoolVar(&cfg.NoPrefault, "no-prefault", false, "do not touch, untimed, the memory the files scenario's transfers will hold before measuring them (on virtual machines that hand freed memory back to the hypervisor, the first write into a page costs a fault that the disk baseline, which rewrites one file, does not pay)")
	f.IntVar(&cfg.HostChannels, "host-channels", bench.DefaultHostChannels, "channels the channels scenario signs in through the host")
	f.DurationVar(&cfg.ChannelsBudget, "channels-budget", bench.DefaultChannelsBudget, "time bound of each phase of the channels scenario")
	f.StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the run to this file (read it with go tool pprof -top)")
	f.StringVar(&memProf, "memprofile", "", "write an allocation profile of the run to this file at its end (read it with go tool pprof -sample_index=alloc_objects -top)")
	f.StringVar(&tracePath, "trace", "", "write a runtime execution trace of the invoke scenario's open-loop phase (its p99 at half of peak) to this file (read it with go tool trace -pprof=sched)")
	f.StringVar(&cfg.Dir, "dir", "", "directory for SQLite and transfer files (default: a temporary directory)")
	f.BoolVar(&quiet, "quiet", false, "do not print progress to stderr")
	return cmd
}

// startCPUProfile starts a CPU profile into path and returns its stop
// function.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// startMemProfile returns a function that writes the allocation profile
// (every allocation since the start of the process, sampled) into path.
func startMemProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("memory profile: %w", err)
	}
	return func() {
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		_ = f.Close()
	}, nil
}

// redactArgs returns args with the password of every URL replaced (a
// broker URL or a PostgreSQL DSN given on the command line), for the
// report's command line.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		name, val, isFlag := strings.Cut(a, "=")
		if !isFlag || !strings.HasPrefix(name, "-") {
			name, val = "", a
		}
		if u, err := url.Parse(val); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				val = u.Redacted()
			}
		}
		if name != "" {
			val = name + "=" + val
		}
		out[i] = val
	}
	return out
}
