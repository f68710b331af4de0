package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/xconn/xconn/cmd/xconn/internal/chaos"
	"github.com/xconn/xconn/store"
)

// ensureRunning restarts a child that exited without being told to; each
// such exit is a broken invariant.
func (r *chaosRun) ensureRunning() {
	for _, p := range append(append([]*chaosProc(nil), r.conns...), r.host) {
		if code, last, unexpected := p.exitedUnexpectedly(); unexpected {
			if strings.Contains(last, "the active lease was lost") {
				// Fencing, as designed (serve webchat --lease-ttl): the
				// store did not answer its renewals in time.
				r.mu.Lock()
				r.leaseLosses++
				r.mu.Unlock()
				r.logf("%s lost its active lease and exited; restarting it as a standby", p.name)
			} else {
				r.chk.Problem("%s exited by itself (%s)", p.name, code)
				r.logf("%s exited by itself (%s); restarting", p.name, code)
			}
			if err := p.start(); err != nil {
				r.chk.Problem("restart %s: %v", p.name, err)
			}
		}
	}
}

// inject applies one fault.
func (r *chaosRun) inject(ctx context.Context, fault chaos.Fault) {
	r.chk.Fault(fault)
	switch fault {
	case chaos.KillConnector:
		i := r.active()
		if i < 0 {
			i = 0
		}
		r.conns[i].kill()
		killed := time.Now()
		if len(r.conns) == 2 {
			other := 1 - i
			bound := r.f.leaseTTL*5/4 + chaosStartSlack
			if r.waitHealthy(ctx, other, bound+10*time.Second) {
				took := time.Since(killed)
				r.mu.Lock()
				r.takeovers = append(r.takeovers, took)
				r.mu.Unlock()
				if took > bound {
					r.chk.Problem("standby took over after %s (bound %s)", took.Round(time.Millisecond), bound)
				}
				r.logf("fault %s: SIGKILL %s; %s took over in %s", fault, r.conns[i].name, r.conns[other].name, took.Round(time.Millisecond))
			} else if ctx.Err() == nil {
				r.chk.Problem("no standby took over within %s", bound+10*time.Second)
			}
			_ = r.conns[i].start() // the new standby
			return
		}
		sleepCtx(ctx, r.sched.Duration(0, 1500*time.Millisecond))
		_ = r.conns[i].start()
		r.logf("fault %s: SIGKILL %s and restart", fault, r.conns[i].name)
	case chaos.KillHost:
		r.host.kill()
		sleepCtx(ctx, r.sched.Duration(0, 1500*time.Millisecond))
		_ = r.host.start()
		r.logf("fault %s: SIGKILL host and restart", fault)
	case chaos.NewConnectorID:
		r.host.kill()
		r.host.extra = []string{"--new-connector-id"}
		_ = r.host.start()
		r.host.extra = nil
		r.logf("fault %s: host restarted without its connector_id", fault)
	case chaos.HostOutage:
		r.host.term(10 * time.Second)
		d := r.f.outboxTTL + r.sched.Duration(2*time.Second, 6*time.Second)
		r.logf("fault %s: host stopped for %s", fault, d.Round(time.Millisecond))
		sleepCtx(ctx, d)
		_ = r.host.start()
	case chaos.Drop:
		n := r.proxy.Drop()
		r.logf("fault %s: %d connection(s) dropped", fault, n)
	case chaos.Stall:
		d := r.sched.Duration(time.Second, 6*time.Second)
		r.proxy.Stall(d)
		r.logf("fault %s: proxy stalled for %s", fault, d.Round(time.Millisecond))
	case chaos.HalfClose:
		n := r.proxy.HalfClose()
		r.logf("fault %s: %d connection(s) half-closed", fault, n)
	case chaos.SlowConsumer:
		d := r.sched.Duration(2*time.Second, 6*time.Second)
		r.proxy.Slow(d, 30*time.Millisecond)
		until := time.Now().Add(d).UnixNano()
		for _, b := range r.browsers {
			b.slowUntil.Store(until)
		}
		r.logf("fault %s: slow link and browsers for %s", fault, d.Round(time.Millisecond))
	}
}

// quiesce pauses the browsers, waits until nothing is pending (bounded),
// then samples every child. It reports whether quiescence was reached.
func (r *chaosRun) quiesce(ctx context.Context, obs *store.DB, final bool) bool {
	r.paused.Store(true)
	_ = os.WriteFile(r.pauseFile(), nil, 0o600)
	defer func() {
		_ = os.Remove(r.pauseFile())
		r.paused.Store(false)
	}()
	limit := 60 * time.Second
	if final {
		limit = chaosDrainTimeout
	}
	deadline := time.Now().Add(limit)
	for {
		m, rep, tools := r.chk.Pending()
		if m == 0 && rep == 0 && tools == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if final {
				r.logf("drain: %d message(s), %d reply(ies), %d tool call(s) pending", m, rep, tools)
			}
			return false
		}
		r.ensureRunning()
		if obs != nil {
			r.refreshExpired(ctx, obs)
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	sleepCtx(ctx, time.Second) // let closing sockets and goroutines settle
	r.sample()
	return true
}

// sample records the descriptors and goroutines of every running child.
func (r *chaosRun) sample() {
	var got []string
	if i := r.active(); i >= 0 {
		if s, ok := r.sampleProc(r.conns[i], "http://127.0.0.1:"+r.ports[i]+"/metrics", true); ok {
			got = append(got, fmt.Sprintf("%s fds=%d goroutines=%d", s.name, s.fds, s.goroutines))
		}
	}
	r.mu.Lock()
	addr := r.hostMetrics
	r.mu.Unlock()
	if addr != "" && r.host.running() {
		if s, ok := r.sampleProc(r.host, "http://"+addr+"/metrics", false); ok {
			got = append(got, fmt.Sprintf("%s fds=%d goroutines=%d", s.name, s.fds, s.goroutines))
		}
	}
	r.mu.Lock()
	r.quiesced++
	r.mu.Unlock()
	r.logf("quiescent: %s", strings.Join(got, ", "))
}

func (r *chaosRun) sampleProc(p *chaosProc, metricsURL string, withKey bool) (chaosSample, bool) {
	pid := p.pid()
	if pid == 0 {
		return chaosSample{}, false
	}
	fds, err := chaos.FDCount(pid)
	if err != nil {
		return chaosSample{}, false
	}
	req, _ := http.NewRequest(http.MethodGet, metricsURL, nil)
	if withKey {
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return chaosSample{}, false
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	r.scan.Scan(p.name+" /metrics", page)
	g, ok := chaos.MetricValue(page, "go_goroutines")
	if !ok {
		return chaosSample{}, false
	}
	s := chaosSample{name: fmt.Sprintf("%s[%d]", p.name, pid), fds: fds, goroutines: int(g)}
	r.mu.Lock()
	s.soak = r.soaking
	r.samples[pid] = append(r.samples[pid], s)
	r.mu.Unlock()
	return s, true
}

// checkGrowth looks for growth per process: over the whole run, the last
// sample against the second (the first is taken while caches warm up),
// with a wide margin; and over the soak cycles at the end (identical
// drops), any growth with every cycle.
func (r *chaosRun) checkGrowth() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ss := range r.samples {
		var soakG, soakF []int
		for _, s := range ss {
			if s.soak {
				soakG, soakF = append(soakG, s.goroutines), append(soakF, s.fds)
			}
		}
		last := ss[len(ss)-1]
		if len(soakG) >= chaosMinSoak {
			if chaos.Growing(soakG, len(soakG)-1) {
				r.chk.Leak(fmt.Sprintf("%s goroutines grew with every soak cycle: %v", last.name, soakG))
			}
			if chaos.Growing(soakF, len(soakF)-1) {
				r.chk.Leak(fmt.Sprintf("%s descriptors grew with every soak cycle: %v", last.name, soakF))
			}
		}
		if len(ss) < 3 {
			continue
		}
		base := ss[1]
		if last.goroutines > base.goroutines+base.goroutines/2+chaosGoroutineSlack {
			r.chk.Leak(fmt.Sprintf("%s goroutines grew from %d to %d over %d quiescent points", last.name, base.goroutines, last.goroutines, len(ss)))
		}
		if last.fds > base.fds+chaosFDSlack {
			r.chk.Leak(fmt.Sprintf("%s descriptors grew from %d to %d over %d quiescent points", last.name, base.fds, last.fds, len(ss)))
		}
	}
}

// soak runs n identical cycles at the end, the browsers paused: drop every
// connection of both proxies, wait for quiescence, sample. A process that
// leaks per reconnect grows with every cycle.
func (r *chaosRun) soak(ctx context.Context, obs *store.DB, n int) {
	r.mu.Lock()
	r.soaking = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.soaking = false
		r.mu.Unlock()
	}()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		r.chk.Fault(chaos.Drop)
		r.proxy.Drop()
		r.web.Drop()
		sleepCtx(ctx, time.Second)
		if !r.quiesce(ctx, obs, false) {
			r.logf("soak: cycle %d did not quiesce; the remaining cycles are skipped", i+1)
			return
		}
	}
}
