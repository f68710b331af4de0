package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		ip   string
		want Class // "" for public
	}{
		{"8.8.8.8", ""},
		{"203.0.113.7", ""},
		{"2606:4700::1111", ""},
		{"127.0.0.1", Loopback},
		{"127.9.9.9", Loopback},
		{"::1", Loopback},
		{"10.1.2.3", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"172.32.0.1", ""},
		{"192.168.1.1", Private},
		{"fec0::1", Private},
		{"fd12:3456::1", UniqueLocal},
		{"169.254.1.1", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		{"100.64.0.1", Shared},
		{"100.127.255.254", Shared},
		{"169.254.169.254", Metadata},
		{"169.254.170.2", Metadata},
		{"100.100.100.200", Metadata},
		{"fd00:ec2::254", Metadata},
		{"224.0.0.1", Multicast},
		{"ff02::1", Multicast},
		{"255.255.255.255", Broadcast},
		{"0.0.0.0", Unspecified},
		{"::", Unspecified},
		{"0.1.2.3", Reserved},
		{"240.0.0.1", Reserved},
		{"198.18.0.1", Reserved},
		// IPv6 forms that carry an IPv4 address are judged by it.
		{"::ffff:127.0.0.1", Loopback},
		{"::ffff:169.254.169.254", Metadata},
		{"64:ff9b::a00:1", Private},
		{"2002:7f00:1::", Loopback},
		{"64:ff9b::808:808", ""},
	}
	for _, tt := range tests {
		got, blocked := Classify(netip.MustParseAddr(tt.ip))
		if got != tt.want || blocked != (tt.want != "") {
			t.Errorf("Classify(%s) = %q, %v; want %q", tt.ip, got, blocked, tt.want)
		}
	}
}

// TestCheckAllowPrivate: allowing private networks lets loopback, private,
// unique-local, link-local and shared addresses through, never metadata,
// multicast, broadcast, unspecified or reserved ones.
func TestCheckAllowPrivate(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "10.0.0.1", "fd12::1", "fe80::1", "100.64.0.1"} {
		a := netip.MustParseAddr(ip)
		if err := Check(a, false); !errors.Is(err, ErrBlocked) {
			t.Errorf("Check(%s, false) = %v, want blocked", ip, err)
		}
		if err := Check(a, true); err != nil {
			t.Errorf("Check(%s, true) = %v", ip, err)
		}
	}
	for _, ip := range []string{"169.254.169.254", "224.0.0.1", "255.255.255.255", "0.0.0.0", "240.0.0.1"} {
		var be *BlockedError
		if err := Check(netip.MustParseAddr(ip), true); !errors.As(err, &be) || be.Addr.String() != ip {
			t.Errorf("Check(%s, true) = %v, want a *BlockedError naming it", ip, err)
		}
	}
	if err := Check(netip.MustParseAddr("203.0.113.7"), false); err != nil {
		t.Errorf("a public address: %v", err)
	}
}

// TestControlOnRealSockets: a net.Dialer with Control refuses a loopback
// connection after resolution ("localhost" too), and lets it through when
// private networks are allowed.
func TestControlOnRealSockets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	defer wg.Wait()
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		d := net.Dialer{Control: Control(false)}
		if c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port)); err == nil || !errors.Is(err, ErrBlocked) {
			if c != nil {
				c.Close()
			}
			t.Errorf("dial %s: %v, want refused", host, err)
		}
		gd := Dialer{}
		if _, err := gd.DialContext(ctx, "tcp", net.JoinHostPort(host, port)); !errors.Is(err, ErrBlocked) {
			t.Errorf("Dialer dial %s: %v, want refused", host, err)
		}
		allowed := Dialer{AllowPrivate: true}
		c, err := allowed.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			t.Errorf("dial %s with private networks allowed: %v", host, err)
			continue
		}
		c.Close()
	}
}

// TestDialerResolvesThenDialsCheckedLiterals: through the seams, a name
// resolving to a private and a public address is dialed at the public one
// only, as an IP literal; a name with only non-public addresses is never
// dialed.
func TestDialerResolvesThenDialsCheckedLiterals(t *testing.T) {
	var dialed []string
	d := Dialer{
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "cdn.example.test":
				return []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("203.0.113.9")}, nil
			case "rebind.example.test":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		},
		Connect: func(_ context.Context, _, address string) (net.Conn, error) {
			dialed = append(dialed, address)
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
	}
	ctx := context.Background()
	c, err := d.DialContext(ctx, "tcp", "cdn.example.test:443")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !slices.Equal(dialed, []string{"203.0.113.9:443"}) {
		t.Fatalf("dialed %v, want only the public address", dialed)
	}
	dialed = nil
	var be *BlockedError
	if _, err := d.DialContext(ctx, "tcp", "rebind.example.test:80"); !errors.As(err, &be) || be.Class != Metadata {
		t.Fatalf("a name with only internal addresses: %v, want the metadata address refused", err)
	}
	if _, err := d.DialContext(ctx, "tcp", "[::ffff:10.0.0.1]:80"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("a mapped private literal: %v, want refused", err)
	}
	if len(dialed) != 0 {
		t.Fatalf("dialed %v for refused addresses", dialed)
	}
}
