// Command hostileprobe re-runs the reproductions of the hostile-input
// review (issue 20) against `xconn serve webchat` running as a child
// process, one fresh process per scenario, and prints for each the
// outcome and the child's peak resident set size (VmHWM from
// /proc/PID/status, so Linux only).
//
//	go build -o /tmp/xconn ./cmd/xconn
//	go run ./testrig/cmd/hostileprobe --xconn /tmp/xconn [--scenario flood,auth,...]
//
// Scenarios (the review's numbers):
//
//	flood    one socket sends 1,200 frames of 1 MB whose packet_id is echoed, never reads
//	auth     400 auth.start with 0.5 MB secret values; ping latency before and after
//	nohello  16 sockets that never send hello; then a real xAgent dials
//	cycles   1,000 hello/close cycles; then a real xAgent says hello
//	idle     2,000 idle keep-alive connections; then GET /health
//	opens    a burst of 20,000 channel.open on one socket
//
// It is a measurement tool, not a test: it exits 1 only when the child
// cannot be started.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/xconn/xconn/protocol"
)

const cardID = "im.webchat"

func main() {
	bin := flag.String("xconn", "xconn", "path of the xconn binary to measure")
	only := flag.String("scenario", "flood,auth,nohello,cycles,idle,opens", "comma-separated scenarios to run")
	flag.Parse()
	scenarios := map[string]func(*child) string{
		"flood": flood, "auth": authFlood, "nohello": noHello, "cycles": cycles, "idle": idle, "opens": opens,
	}
	for _, name := range strings.Split(*only, ",") {
		run, ok := scenarios[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "hostileprobe: unknown scenario %q\n", name)
			os.Exit(2)
		}
		c, err := startChild(*bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostileprobe:", err)
			os.Exit(1)
		}
		base := c.rss()
		start := time.Now()
		outcome := run(c)
		peak := c.peakRSS()
		health := c.healthStatus()
		c.stop()
		fmt.Printf("%-8s peak_rss=%dMB base_rss=%dMB took=%s health_after=%d  %s\n",
			name, peak>>10, base>>10, time.Since(start).Round(100*time.Millisecond), health, outcome)
	}
}

// child is one `xconn serve webchat` process.
type child struct {
	cmd  *exec.Cmd
	dir  string
	base string // http://host:port
	key  string
}

func startChild(bin string) (*child, error) {
	dir, err := os.MkdirTemp("", "hostileprobe-")
	if err != nil {
		return nil, err
	}
	k := make([]byte, 24)
	_, _ = rand.Read(k)
	c := &child{dir: dir, key: hex.EncodeToString(k)}
	c.cmd = exec.Command(bin, "serve", "webchat", "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	c.cmd.Env = append(os.Environ(), "XCONN_API_KEY="+c.key) // the environment form works on old and new binaries
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stderr = io.Discard
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Base URL:"); ok {
			c.base = strings.TrimRight(strings.TrimSpace(rest), "/")
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if c.base == "" {
		c.stop()
		return nil, errors.New("the child printed no Base URL")
	}
	for range 100 {
		if c.healthStatus() == http.StatusOK {
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.stop()
	return nil, errors.New("the child never answered /health")
}

func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	_ = os.RemoveAll(c.dir)
}

// statusKB reads a "VmXXX:   N kB" line of /proc/PID/status.
func (c *child) statusKB(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return n
		}
	}
	return -1
}

func (c *child) rss() int64     { return c.statusKB("VmRSS") }
func (c *child) peakRSS() int64 { return c.statusKB("VmHWM") }

func (c *child) healthStatus() int {
	req, _ := http.NewRequest(http.MethodGet, c.base+protocol.PathHealth, nil)
	req.Header.Set("Authorization", "Bearer "+c.key)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (c *child) dial(ctx context.Context) (*websocket.Conn, int, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.key)
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.base, "http")+protocol.PathWS,
		&websocket.DialOptions{Subprotocols: []string{protocol.Subprotocol}, HTTPHeader: h})
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	if err != nil {
		return nil, status, err
	}
	ws.SetReadLimit(64 << 20)
	return ws, status, nil
}

func packet(packetID, requestID, channel, typ string, payload any) []byte {
	env := protocol.Envelope{Schema: protocol.PacketSchema, PacketID: packetID, RequestID: requestID, ConnectorChannelID: channel, Type: typ}
	if payload != nil {
		env.Payload, _ = json.Marshal(payload)
	}
	b, _ := env.MarshalJSON()
	return b
}

func read(ctx context.Context, ws *websocket.Conn) (*protocol.Envelope, error) {
	_, b, err := ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	var env protocol.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	return &env, nil
}

// hello completes connector.hello on ws; it returns the connector_id or
// the refusal code.
func hello(ctx context.Context, ws *websocket.Conn, connectorID string) (string, error) {
	p := protocol.HelloPayload{ConnectorCardID: cardID, ConnectorID: connectorID, ProtocolVersion: protocol.ProtocolVersion,
		SupportedProfiles: []protocol.Profile{protocol.ProfileIMv2}}
	if err := ws.Write(ctx, websocket.MessageText, packet("hello", "req-hello", "", protocol.TypeHello, p)); err != nil {
		return "", err
	}
	for {
		env, err := read(ctx, ws)
		if err != nil {
			return "", err
		}
		switch {
		case env.Error != nil:
			return "", fmt.Errorf("%s", env.Error.Code)
		case env.Type == protocol.TypeHelloAck:
			var ack protocol.HelloAckPayload
			_ = env.DecodePayload(&ack)
			return ack.ConnectorID, nil
		}
	}
}

// request sends one packet and waits for the answer with its request_id.
func request(ctx context.Context, ws *websocket.Conn, reqID, channel, typ string, payload any) (*protocol.Envelope, error) {
	if err := ws.Write(ctx, websocket.MessageText, packet("p-"+reqID, reqID, channel, typ, payload)); err != nil {
		return nil, err
	}
	for {
		env, err := read(ctx, ws)
		if err != nil {
			return nil, err
		}
		if env.RequestID == reqID {
			return env, nil
		}
	}
}

// served reports whether a well-behaved xAgent gets hello, an open and a
// ping answered.
func served(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, status, err := c.dial(ctx)
	if err != nil {
		return fmt.Sprintf("another xAgent: dial refused (HTTP %d)", status)
	}
	defer ws.CloseNow()
	if _, err := hello(ctx, ws, ""); err != nil {
		return "another xAgent: hello failed: " + err.Error()
	}
	env, err := request(ctx, ws, "open-1", "", protocol.TypeChannelOpen, struct{}{})
	if err != nil || env.Error != nil {
		return fmt.Sprintf("another xAgent: channel.open failed: %v %v", err, env)
	}
	return "another xAgent served"
}

func flood(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, _, err := c.dial(ctx)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer ws.CloseNow()
	if _, err := hello(ctx, ws, ""); err != nil {
		return "hello: " + err.Error()
	}
	big := strings.Repeat("p", 1_000_000)
	sent := 0
	for i := range 1200 {
		wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
		err := ws.Write(wctx, websocket.MessageText, packet(big+strconv.Itoa(i), "", "", protocol.TypePing, struct{}{}))
		wcancel()
		if err != nil {
			break
		}
		sent++
	}
	other := served(c)
	// Now read what is left: the answers the server still had and its close.
	status := websocket.StatusCode(-1)
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			status = websocket.CloseStatus(err)
			break
		}
	}
	return fmt.Sprintf("sent=%d/1200 close_status=%d; %s", sent, status, other)
}

func authFlood(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, _, err := c.dial(ctx)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer ws.CloseNow()
	if _, err := hello(ctx, ws, ""); err != nil {
		return "hello: " + err.Error()
	}
	open, err := request(ctx, ws, "open", "", protocol.TypeChannelOpen, struct{}{})
	if err != nil || open.Error != nil {
		return "open failed"
	}
	ch := open.ConnectorChannelID
	ping := func() time.Duration {
		t := time.Now()
		_, _ = request(ctx, ws, "ping-"+strconv.FormatInt(t.UnixNano(), 36), "", protocol.TypePing, struct{}{})
		return time.Since(t)
	}
	before := ping()
	codes := map[string]int{}
	secret := strings.Repeat("s", 512<<10)
	for i := range 400 {
		env, err := request(ctx, ws, "auth-"+strconv.Itoa(i), ch, protocol.TypeAuthStart,
			map[string]any{"flow_id": "webchat_room", "input": map[string]string{"room": "probe", "access_code": strconv.Itoa(i) + secret}})
		if err != nil {
			return "auth.start: " + err.Error()
		}
		code := "ok"
		if env.Error != nil {
			code = env.Error.Code
		}
		codes[code]++
	}
	after := ping()
	return fmt.Sprintf("answers=%v ping_before=%s ping_after=%s", codes, before.Round(time.Millisecond), after.Round(time.Millisecond))
}

func noHello(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var socks []*websocket.Conn
	for range 16 {
		ws, _, err := c.dial(ctx)
		if err != nil {
			break
		}
		socks = append(socks, ws)
	}
	defer func() {
		for _, ws := range socks {
			ws.CloseNow()
		}
	}()
	start := time.Now()
	first := 0
	for {
		ws, status, err := c.dial(ctx)
		if first == 0 {
			first = status
			if err == nil {
				first = 101
			}
		}
		if err == nil {
			_, herr := hello(ctx, ws, "")
			ws.CloseNow()
			if herr == nil {
				return fmt.Sprintf("silent_sockets=%d first_dial=%d; real xAgent admitted after %s", len(socks), first, time.Since(start).Round(100*time.Millisecond))
			}
		}
		if ctx.Err() != nil {
			return fmt.Sprintf("silent_sockets=%d first_dial=%d; real xAgent locked out for 2 min", len(socks), first)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func cycles(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	failed := 0
	for range 1000 {
		ws, _, err := c.dial(ctx)
		if err != nil {
			failed++
			continue
		}
		if _, err := hello(ctx, ws, ""); err != nil {
			failed++
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	return fmt.Sprintf("cycles=1000 refused=%d; %s", failed, served(c))
}

func idle(c *child) string {
	addr := strings.TrimPrefix(c.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	opened := 0
	for range 2000 {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			break
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", protocol.PathHealth, c.key)
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err == nil {
			resp.Body.Close()
			opened++
		}
		_ = nc.SetDeadline(time.Time{})
		conns = append(conns, nc)
	}
	health := c.healthStatus()
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, nc := range conns {
		wg.Go(func() {
			_ = nc.SetReadDeadline(time.Now().Add(3 * time.Second))
			var ne net.Error
			if _, err := nc.Read(make([]byte, 1)); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("keepalive_conns=%d closed_by_server=%d health_while_held=%d", opened, closed.Load(), health)
}

func opens(c *child) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ws, _, err := c.dial(ctx)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer ws.CloseNow()
	if _, err := hello(ctx, ws, ""); err != nil {
		return "hello: " + err.Error()
	}
	const n = 20000
	codes := map[string]int{}
	answered := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for answered < n {
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			env, err := read(rctx, ws)
			rcancel()
			if err != nil {
				return
			}
			if !strings.HasPrefix(env.RequestID, "open-") {
				continue
			}
			answered++
			code := "ok"
			if env.Error != nil {
				code = env.Error.Code
			}
			codes[code]++
		}
	}()
	for i := range n {
		if ws.Write(ctx, websocket.MessageText, packet("p-open-"+strconv.Itoa(i), "open-"+strconv.Itoa(i), "", protocol.TypeChannelOpen, struct{}{})) != nil {
			break
		}
	}
	<-done
	return fmt.Sprintf("opens=%d answered=%d unanswered=%d codes=%v", n, answered, n-answered, codes)
}
