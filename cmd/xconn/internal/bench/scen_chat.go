package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// chatPendingPerChannel bounds the unacked messages of each channel the
// chat scenarios keep (far below the outbox capacity, so nothing is
// evicted): a user who sent four messages waits for them to be taken.
const chatPendingPerChannel = 4

// runInbound measures Channel.Publish -> host Agent -> accepted ack, one
// row per channel count.
func runInbound(ctx context.Context, cfg Config, e *env) ([]Result, error) {
	var out []Result
	for _, n := range cfg.ChatChannels {
		res, err := runInboundAt(ctx, cfg, e, chatLoad{channels: n, window: chatPendingPerChannel}, "inbound/"+strconv.Itoa(n))
		if err != nil {
			return out, fmt.Errorf("inbound/%d: %w", n, err)
		}
		out = append(out, res)
	}
	chatGoals(out, "inbound", isPostgres(cfg.Store))
	return out, nil
}

// runInboundAt measures inbound under load l, as row name.
func runInboundAt(ctx context.Context, cfg Config, e *env, l chatLoad, name string) (Result, error) {
	n := l.channels
	dir, clean, err := scenarioDir(cfg, strings.ReplaceAll(name, "/", "-"))
	if err != nil {
		return Result{}, err
	}
	defer clean()
	d := newChatDriver(protocol.ToConnector, l)
	agent := host.AgentFunc(func(_ context.Context, msg *host.UserMessage, _ host.ReplyStream) error {
		d.arrived(msg.Text)
		return nil
	})
	r, err := newRig(ctx, dir, rigOptions{agent: agent, onPacket: d.observe, logger: cfg.Logger, store: cfg.Store})
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	ucs, err := r.signIn(ctx, n, 16, false)
	if err != nil {
		return Result{}, err
	}
	chans := make([]*connector.Channel, len(ucs))
	ids := make([]string, len(ucs))
	for i, uc := range ucs {
		ids[i] = uc.ChannelID
		if chans[i], err = r.conn.Channel(uc.ChannelID); err != nil {
			return Result{}, fmt.Errorf("channel: %w", err)
		}
	}
	send := func(ctx context.Context, p int, key string) error {
		_, err := chans[p].Publish(ctx, connector.UserMessage{MessageID: "msg_" + key, Text: chatText(key, cfg.MessageSize)})
		return err
	}
	d.bind(ids)
	return r.chatRow(ctx, cfg, e, d, name, len(chans), send)
}

// runOutbound measures host ReplyStream.Final -> connector no-op target ->
// accepted ack, one row per channel count.
func runOutbound(ctx context.Context, cfg Config, e *env) ([]Result, error) {
	var out []Result
	for _, n := range cfg.ChatChannels {
		res, err := runOutboundAt(ctx, cfg, e, chatLoad{channels: n, window: chatPendingPerChannel}, "outbound/"+strconv.Itoa(n))
		if err != nil {
			return out, fmt.Errorf("outbound/%d: %w", n, err)
		}
		out = append(out, res)
	}
	chatGoals(out, "outbound", isPostgres(cfg.Store))
	return out, nil
}

// runOutboundAt measures outbound under load l, as row name.
func runOutboundAt(ctx context.Context, cfg Config, e *env, l chatLoad, name string) (Result, error) {
	n := l.channels
	dir, clean, err := scenarioDir(cfg, strings.ReplaceAll(name, "/", "-"))
	if err != nil {
		return Result{}, err
	}
	defer clean()
	d := newChatDriver(protocol.ToHost, l)
	onMsg := func(_ context.Context, _ *connector.Channel, m *connector.AssistantMessage) error {
		d.arrived(m.Text)
		return nil
	}
	r, err := newRig(ctx, dir, rigOptions{onAssistant: onMsg, onPacket: d.observe, logger: cfg.Logger, store: cfg.Store})
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	ucs, err := r.signIn(ctx, n, 16, false)
	if err != nil {
		return Result{}, err
	}
	streams := make([]host.ReplyStream, len(ucs))
	ids := make([]string, len(ucs))
	for i, uc := range ucs {
		ids[i] = uc.ChannelID
		if streams[i], err = r.host.Reply(ctx, uc.ID); err != nil {
			return Result{}, fmt.Errorf("reply stream: %w", err)
		}
	}
	send := func(ctx context.Context, p int, key string) error {
		_, err := streams[p].Final(ctx, chatText(key, cfg.MessageSize))
		return err
	}
	d.bind(ids)
	return r.chatRow(ctx, cfg, e, d, name, len(streams), send)
}

// chatRow runs the warm-up and the measurement of a chat scenario on r and
// returns its row, with the group commit figures of both stores.
func (r *rig) chatRow(ctx context.Context, cfg Config, _ *env, d *chatDriver, name string, producers int,
	send func(ctx context.Context, p int, key string) error) (Result, error) {
	if _, err := d.run(ctx, producers, cfg.Warmup, send); err != nil {
		return Result{}, fmt.Errorf("warm-up: %w", err)
	}
	c0, h0, cpu0 := r.cdb.CommitStats(), r.hdb.CommitStats(), cpuTime()
	m, err := d.run(ctx, producers, cfg.Duration, send)
	if err != nil {
		return Result{}, err
	}
	c1, h1, cpu1 := r.cdb.CommitStats(), r.hdb.CommitStats(), cpuTime()
	res := m.result(name, "msg/s")
	n := "/" + strconv.Itoa(producers)
	res.Baseline, res.Also = nameRabbitMQ+n, []string{nameJetStream + n, nameSQLiteBatch}
	if isPostgres(cfg.Store) {
		res.Baseline, res.Also = namePGBatch, []string{nameRabbitMQ + n, nameJetStream + n}
	}
	res.Extra = append(res.Extra, Metric{Name: "durability", Text: chatDurability(cfg.Store)})
	if m.ops > 0 && cpu1 > cpu0 {
		// Less sensitive to other processes than the rate: the CPU time
		// of the whole process (both sides, the load generator) per
		// message.
		res.Extra = append(res.Extra, Metric{Name: "cpu_per_msg", Value: round2(float64(cpu1-cpu0) / float64(m.ops) / 1e3), Unit: "µs (process CPU time)"})
	}
	res.Extra = append(res.Extra, commitMetrics("connector", c0, c1, m.elapsed)...)
	res.Extra = append(res.Extra, commitMetrics("host", h0, h1, m.elapsed)...)
	res.Extra = append(res.Extra, m.notes()...)
	return res, nil
}

// commitMetrics are the group commit figures of one store over a window.
func commitMetrics(side string, a, b store.CommitStats, window time.Duration) []Metric {
	commits := b.Commits - a.Commits
	if commits <= 0 {
		return nil
	}
	return []Metric{
		{Name: side + "_ops_per_commit", Value: round2(float64(b.Ops-a.Ops) / float64(commits)), Unit: "operations"},
		{Name: side + "_commits", Value: round2(float64(commits) / window.Seconds()), Unit: "per s"},
		{Name: side + "_committer_busy", Value: round2(100 * float64(b.Busy-a.Busy) / float64(window)), Unit: "% of the window (summed over its workers: 1 on SQLite, 4 on PostgreSQL)"},
	}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// chatGoals sets the goals of a chat scenario's rows. On SQLite, at 64
// channels: at least the rate of the RabbitMQ baseline at the same load,
// half the JetStream baseline's, and a p99 no higher than RabbitMQ's; on
// PostgreSQL at 64 channels, at least 0.35 of raw batched PostgreSQL (the
// ratio reached before the broker baselines). From 64 channels up no row
// below the rate at 64.
func chatGoals(rows []Result, scenario string, pg bool) {
	var at64 float64
	for _, r := range rows {
		if r.Name == scenario+"/64" {
			at64 = r.Rate
		}
	}
	for i := range rows {
		r := &rows[i]
		n, _ := strconv.Atoi(strings.TrimPrefix(r.Name, scenario+"/"))
		switch {
		case n == 64 && pg:
			r.Goal = ">= 0.35"
		case n == 64:
			r.Goal = ">= 1.0 rabbitmq, >= 0.5 jetstream, p99 <= rabbitmq's"
			r.checks = []goalCheck{{against: nameRabbitMQ + "/64", kind: goalRate, factor: 1},
				{against: nameJetStream + "/64", kind: goalRate, factor: 0.5},
				{against: nameRabbitMQ + "/64", kind: goalP99, factor: 1}}
		case n > 64 && at64 > 0:
			r.Goal = "rate >= at 64 ch"
			r.Extra = append(r.Extra, Metric{Name: "rate_vs_64_channels", Value: round2(r.Rate / at64), Unit: "x"})
		}
	}
}

// chatDurability says what a chat row's commit survives.
func chatDurability(dsn string) string {
	if isPostgres(dsn) {
		return "PostgreSQL as the server is configured (a commit waits for its WAL flush unless synchronous_commit is off)"
	}
	return "SQLite WAL, synchronous=NORMAL (the store's default): a commit is in the WAL file before the sender is told; the WAL is fsynced at checkpoints, not at each commit; survives a crash of the process, not of the machine"
}

// chatText is a message text of about size bytes that starts with key.
func chatText(key string, size int) string {
	return key + " " + strings.Repeat("x", max(0, size-len(key)-1))
}
