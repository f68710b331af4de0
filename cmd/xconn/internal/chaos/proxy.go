package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ProxyOptions configures a Proxy.
type ProxyOptions struct {
	// Upstreams returns the addresses to try, in order, for each new
	// connection (a failover pair gives both: the standby does not
	// listen). Required.
	Upstreams func() []string
	// Scanner, when set, scans every byte sent back to clients
	// (upstream → client) for canaries.
	Scanner *Scanner
	// Name prefixes the scanner's stream names ("proxy" by default).
	Name string
	// HalfCloseLinger bounds how long a half-closed connection may live
	// before it is closed (default 10 s).
	HalfCloseLinger time.Duration
	// MaxConns bounds concurrent connections (default 256); more are
	// refused.
	MaxConns int
}

// Proxy is a loopback TCP proxy between clients and an upstream that
// injects faults on command: Drop, Stall, HalfClose and Slow. Every
// connection is owned by the proxy; Close ends them all and waits for its
// goroutines. Safe for concurrent use.
type Proxy struct {
	opts ProxyOptions
	ln   net.Listener
	wg   sync.WaitGroup

	mu         sync.Mutex
	conns      map[*link]struct{}
	stallUntil time.Time
	slowUntil  time.Time
	slowDelay  time.Duration
	closed     bool
	accepted   int
}

// link is one proxied connection: client and upstream sockets.
type link struct {
	client, up net.Conn
	once       sync.Once
	half       atomic.Bool // client→upstream shut by HalfClose
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.up.Close()
	})
}

// Listen starts a proxy on addr ("127.0.0.1:0" for any port).
func Listen(addr string, opts ProxyOptions) (*Proxy, error) {
	if opts.Upstreams == nil {
		return nil, errors.New("chaos: proxy needs Upstreams")
	}
	if opts.Name == "" {
		opts.Name = "proxy"
	}
	if opts.HalfCloseLinger <= 0 {
		opts.HalfCloseLinger = 10 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 256
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy listen: %w", err)
	}
	p := &Proxy{opts: opts, ln: ln, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's listening address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Conns returns the number of open proxied connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	var up net.Conn
	for _, a := range p.opts.Upstreams() {
		var err error
		if up, err = net.DialTimeout("tcp", a, 2*time.Second); err == nil {
			break
		}
	}
	if up == nil {
		c.Close()
		return
	}
	l := &link{client: c, up: up}
	p.mu.Lock()
	if p.closed || len(p.conns) >= p.opts.MaxConns {
		p.mu.Unlock()
		l.close()
		return
	}
	p.conns[l] = struct{}{}
	p.accepted++
	n := p.accepted
	p.mu.Unlock()
	var scan io.Writer = io.Discard
	if p.opts.Scanner != nil {
		scan = p.opts.Scanner.Stream(fmt.Sprintf("%s conn %d upstream→client", p.opts.Name, n))
	}
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); p.pipe(l, up, c, io.Discard) }()
	go func() { defer done.Done(); p.pipe(l, c, up, scan) }()
	done.Wait()
	l.close()
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, honouring stalls and slow links,
// and half-closes dst when src ends.
func (p *Proxy) pipe(l *link, dst, src net.Conn, scan io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			_, _ = scan.Write(buf[:n])
			if !p.wait() {
				l.close()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				l.close()
				return
			}
		}
		if err != nil {
			if l.half.Load() && src == l.client {
				return // HalfClose shut this direction; the other goes on
			}
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
				return
			}
			l.close()
			return
		}
	}
}

// wait blocks while the proxy is stalled and delays a chunk on a slow
// link; it reports false when the proxy closed.
func (p *Proxy) wait() bool {
	for {
		p.mu.Lock()
		closed := p.closed
		stall := time.Until(p.stallUntil)
		var slow time.Duration
		if time.Now().Before(p.slowUntil) {
			slow = p.slowDelay
		}
		p.mu.Unlock()
		if closed {
			return false
		}
		if stall <= 0 {
			if slow > 0 {
				time.Sleep(slow)
			}
			return true
		}
		time.Sleep(min(stall, 100*time.Millisecond))
	}
}

// Drop closes every open connection at once (both sides see a reset or an
// EOF) and returns how many there were.
func (p *Proxy) Drop() int {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	return len(ls)
}

// Stall stops forwarding in both directions for d: bytes already read
// wait, and the peers' keep-alives go unanswered.
func (p *Proxy) Stall(d time.Duration) {
	p.mu.Lock()
	p.stallUntil = time.Now().Add(d)
	p.mu.Unlock()
}

// Slow delays every forwarded chunk by delay for the next d: a slow
// consumer on either side.
func (p *Proxy) Slow(d, delay time.Duration) {
	p.mu.Lock()
	p.slowUntil, p.slowDelay = time.Now().Add(d), delay
	p.mu.Unlock()
}

// HalfClose shuts the client→upstream direction of every open connection
// (the upstream reads EOF while it can still write) and closes the rest
// after HalfCloseLinger. It returns the number of connections.
func (p *Proxy) HalfClose() int {
	p.mu.Lock()
	ls := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		ls = append(ls, l)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.half.Store(true)
		if tc, ok := l.up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_ = l.client.SetReadDeadline(time.Now()) // stop reading the client
		time.AfterFunc(p.opts.HalfCloseLinger, l.close)
	}
	return len(ls)
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Drop()
	p.wg.Wait()
	return err
}
