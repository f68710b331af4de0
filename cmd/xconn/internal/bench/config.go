package bench

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Defaults of Config, chosen so that every scenario with its baseline runs
// in well under three minutes on a 2-core machine.
const (
	DefaultDuration       = 2 * time.Second
	DefaultWarmup         = 300 * time.Millisecond
	DefaultInFlight       = 64
	DefaultChannels       = 100_000
	DefaultFileSize       = 256 << 20
	DefaultHandlerLatency = 20 * time.Millisecond
	DefaultPingInterval   = 10 * time.Millisecond
	// DefaultHostChannels is the number of channels the channels scenario
	// signs in through the host (each is a full sign-in: channel.open,
	// auth.start and durable writes on both sides).
	DefaultHostChannels = 2000
	// DefaultChannelsBudget bounds each phase of the channels scenario
	// (open, reopen, host sign-ins, host reopen): what is not done by then
	// is reported as such, so that a slow system cannot stall the run.
	DefaultChannelsBudget = 20 * time.Second
	// DefaultInvokeChannels is the number of channels the invoke scenario
	// spreads its calls over (the SDK runs one channel's work in order).
	DefaultInvokeChannels = 8
	// DefaultMessageSize is the text size of tool arguments and chat
	// messages.
	DefaultMessageSize = 64
	// DefaultFileRuns is the number of transfers each way of the files
	// scenario (and writes of its disk baseline); rows report the median.
	DefaultFileRuns = 3
)

// DefaultChatChannels are the channel counts the inbound and outbound
// scenarios spread their messages over, one row each (a channel has one
// message in flight at a time, by the IM v2 ordering rule).
func DefaultChatChannels() []int { return []int{1, 64, 1000} }

// Config sets the sizes of a run. The zero value of every field takes its
// documented default (see WithDefaults). It is a value owned by the caller
// of Run; Run copies it.
type Config struct {
	// Duration is the measured time of each throughput scenario.
	Duration time.Duration
	// Warmup runs before each measurement and is not counted.
	Warmup time.Duration
	// InFlight is the number of concurrent requests of invoke, ping and the
	// WebSocket echo baseline (default 64).
	InFlight int
	// MessageSize is the text size in bytes of tool arguments and chat
	// messages (default 64).
	MessageSize int
	// InvokeChannels is the number of channels invoke spreads its calls
	// over (default 8).
	InvokeChannels int
	// Channels is the number of channels the channels scenario opens
	// (default 100,000).
	Channels int
	// ChannelsBudget bounds each phase of the channels scenario (default
	// 20 s).
	ChannelsBudget time.Duration
	// HostChannels is the number of channels the channels scenario signs
	// in through the host, capped at Channels (default 2,000).
	HostChannels int
	// FileSize is the size of the file the files scenario moves (default
	// 256 MiB).
	FileSize int64
	// SlowChannels are the channel counts of invoke-slow (default 1, 8, 64).
	SlowChannels []int
	// HandlerLatency is the handler time of invoke-slow (default 20 ms).
	HandlerLatency time.Duration
	// PingInterval is the ping period of invoke-slow (default 10 ms).
	PingInterval time.Duration
	// ChatChannels are the channel counts of inbound and outbound, one row
	// each (default 1, 64 and 1,000).
	ChatChannels []int
	// Store is where inbound and outbound keep their durable state: "" for
	// one SQLite file per side, or a postgres:// DSN, where each side gets
	// a schema of its own (created and dropped by the run) and the raw
	// PostgreSQL baselines run against the same server.
	Store string
	// RabbitMQURL is the AMQP URL of the RabbitMQ broker of the
	// baseline/rabbitmq-quorum rows (default DefaultRabbitMQURL); a broker
	// that does not answer makes them skipped.
	RabbitMQURL string
	// NATSURL is the URL of the NATS server (with JetStream) of the
	// baseline/jetstream-file rows (default DefaultNATSURL).
	NATSURL string
	// FileRuns is the number of transfers each way of the files scenario;
	// its rows and its disk baseline report the median (default 3).
	FileRuns int
	// NoPrefault skips the files scenario's untimed touch of the memory
	// its transfers will hold (see prefault).
	NoPrefault bool
	// Dir is where SQLite files and transfer files go; "" makes a temporary
	// directory removed at the end of each scenario.
	Dir string
	// Logger receives the logs of the connector and the host under test
	// (nil: discarded).
	Logger *slog.Logger
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
	// Trace, when set, receives a runtime execution trace (runtime/trace)
	// of the invoke scenario's open-loop phase, the one its p99 at half of
	// peak comes from; nothing else is traced. Read it with go tool trace,
	// for example go tool trace -pprof=sched for where calls waited to run.
	Trace io.Writer
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup <= 0 {
		c.Warmup = DefaultWarmup
	}
	if c.InFlight <= 0 {
		c.InFlight = DefaultInFlight
	}
	if c.MessageSize <= 0 {
		c.MessageSize = DefaultMessageSize
	}
	if c.InvokeChannels <= 0 {
		c.InvokeChannels = DefaultInvokeChannels
	}
	if c.Channels <= 0 {
		c.Channels = DefaultChannels
	}
	if c.ChannelsBudget <= 0 {
		c.ChannelsBudget = DefaultChannelsBudget
	}
	if c.HostChannels <= 0 {
		c.HostChannels = DefaultHostChannels
	}
	if c.FileSize <= 0 {
		c.FileSize = DefaultFileSize
	}
	if len(c.SlowChannels) == 0 {
		c.SlowChannels = []int{1, 8, 64}
	}
	if c.HandlerLatency <= 0 {
		c.HandlerLatency = DefaultHandlerLatency
	}
	if c.PingInterval <= 0 {
		c.PingInterval = DefaultPingInterval
	}
	if len(c.ChatChannels) == 0 {
		c.ChatChannels = DefaultChatChannels()
	}
	if c.RabbitMQURL == "" {
		c.RabbitMQURL = DefaultRabbitMQURL
	}
	if c.NATSURL == "" {
		c.NATSURL = DefaultNATSURL
	}
	if c.FileRuns <= 0 {
		c.FileRuns = DefaultFileRuns
	}
	return c
}

// check rejects values no default stands for: a negative count, size or
// duration, and channel counts below one.
func (c Config) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"duration", int64(c.Duration)}, {"warmup", int64(c.Warmup)}, {"inflight", int64(c.InFlight)},
		{"message-size", int64(c.MessageSize)}, {"invoke-channels", int64(c.InvokeChannels)},
		{"channels", int64(c.Channels)}, {"channels-budget", int64(c.ChannelsBudget)},
		{"host-channels", int64(c.HostChannels)}, {"file-size", c.FileSize}, {"file-runs", int64(c.FileRuns)},
	} {
		if f.v < 0 {
			return fmt.Errorf("bench: --%s must not be negative", f.name)
		}
	}
	for _, n := range c.ChatChannels {
		if n < 1 {
			return fmt.Errorf("bench: --chat-channels: %d is not a channel count (each must be at least 1)", n)
		}
	}
	for _, n := range c.SlowChannels {
		if n < 1 {
			return fmt.Errorf("bench: slow channel count %d must be at least 1", n)
		}
	}
	return nil
}

func (c Config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}
