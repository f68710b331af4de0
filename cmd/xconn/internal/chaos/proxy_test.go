package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers each line with "echo: <line>" and reports EOFs.
func echoServer(t *testing.T) (addr string, eofs <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	eof := make(chan struct{}, 16)
	done := make(chan struct{})
	conns := make(chan net.Conn, 16)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						if errors.Is(err, io.EOF) {
							eof <- struct{}{}
							// Half-closed: the write side still works.
							_, _ = c.Write([]byte("bye\n"))
						}
						c.Close()
						return
					}
					if _, err := c.Write([]byte("echo: " + line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), eof
}

func dialProxy(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, msg string) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(line, "\n")
}

func TestProxyForwardsAndScans(t *testing.T) {
	addr, _ := echoServer(t)
	scan := NewScanner(map[string]string{"api_key": "chaosKEYsecret"})
	p, err := Listen("127.0.0.1:0", ProxyOptions{Upstreams: func() []string { return []string{"127.0.0.1:1", addr} }, Scanner: scan})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dialProxy(t, p)
	if got := roundTrip(t, c, r, "hello"); got != "echo: hello" {
		t.Fatalf("got %q", got)
	}
	if l := scan.Leaks(); len(l) != 0 {
		t.Fatalf("leaks %v", l)
	}
	// The secret going to the upstream is not a leak; coming back it is.
	if got := roundTrip(t, c, r, "chaosKEYsecret"); got != "echo: chaosKEYsecret" {
		t.Fatalf("got %q", got)
	}
	if l := scan.Leaks(); len(l) != 1 || !strings.Contains(l[0].Where, "upstream→client") {
		t.Fatalf("leaks %v", l)
	}
}

func TestProxyFaults(t *testing.T) {
	addr, eofs := echoServer(t)
	var p *Proxy
	fresh := func(t *testing.T) { // one proxy per case: counts are its own
		var err error
		p, err = Listen("127.0.0.1:0", ProxyOptions{Upstreams: func() []string { return []string{addr} }, HalfCloseLinger: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
	}

	t.Run("drop", func(t *testing.T) {
		fresh(t)
		c, r := dialProxy(t, p)
		roundTrip(t, c, r, "x")
		if n := p.Drop(); n != 1 {
			t.Fatalf("dropped %d", n)
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := r.ReadString('\n'); err == nil {
			t.Fatal("read after drop succeeded")
		}
	})
	t.Run("stall", func(t *testing.T) {
		fresh(t)
		c, r := dialProxy(t, p)
		p.Stall(time.Hour)
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte("held\n")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := r.ReadString('\n'); err == nil {
			t.Fatal("an answer came through a stalled proxy")
		}
		p.Stall(0)
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if line, err := r.ReadString('\n'); err != nil || line != "echo: held\n" {
			t.Fatalf("after the stall: %q %v", line, err)
		}
	})
	t.Run("half-close", func(t *testing.T) {
		fresh(t)
		c, r := dialProxy(t, p)
		roundTrip(t, c, r, "x")
		for len(eofs) > 0 {
			<-eofs
		}
		if n := p.HalfClose(); n != 1 {
			t.Fatalf("half-closed %d", n)
		}
		select {
		case <-eofs:
		case <-time.After(30 * time.Second):
			t.Fatal("upstream never read EOF")
		}
		// The upstream's answer after the EOF still reaches the client.
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if line, err := r.ReadString('\n'); err != nil || line != "bye\n" {
			t.Fatalf("after half-close: %q %v", line, err)
		}
	})
	t.Run("slow", func(t *testing.T) {
		fresh(t)
		c, r := dialProxy(t, p)
		p.Slow(time.Hour, time.Millisecond)
		if got := roundTrip(t, c, r, "slow"); got != "echo: slow" {
			t.Fatalf("got %q", got)
		}
		p.Slow(0, 0)
	})
}

func TestProxyNoUpstream(t *testing.T) {
	p, err := Listen("127.0.0.1:0", ProxyOptions{Upstreams: func() []string { return []string{"127.0.0.1:1"} }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dialProxy(t, p)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("a connection without upstream stayed open")
	}
	if _, err := Listen("127.0.0.1:0", ProxyOptions{}); err == nil {
		t.Fatal("no Upstreams accepted")
	}
}
