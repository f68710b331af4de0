// Package netguard keeps outbound connections made on a peer's say (a
// download URL a connector hands the host) away from addresses that are not
// the public internet: loopback, private and unique-local networks,
// link-local and cloud-metadata addresses, shared address space (CGNAT),
// multicast, broadcast, unspecified and reserved addresses.
//
// The check is made on the IP address actually dialed, after DNS
// resolution, for every connection: a [Dialer] resolves the name, refuses
// each non-public address and dials the checked IP literal, and its
// net.Dialer's Control checks the socket's address once more, so a name that
// resolves differently on a second lookup (DNS rebinding) cannot slip
// through. Redirects are new connections and are checked the same way.
//
// The package holds no state; a Dialer is safe for concurrent use.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Class names why an address is not public.
type Class string

// Classes of non-public addresses.
const (
	Loopback    Class = "loopback"
	Private     Class = "private"      // 10/8, 172.16/12, 192.168/16; fec0::/10 (site-local)
	UniqueLocal Class = "unique-local" // fc00::/7
	LinkLocal   Class = "link-local"   // 169.254/16, fe80::/10
	Shared      Class = "shared"       // 100.64/10, carrier-grade NAT
	Metadata    Class = "metadata"     // cloud instance metadata endpoints
	Multicast   Class = "multicast"
	Broadcast   Class = "broadcast"
	Unspecified Class = "unspecified"
	Reserved    Class = "reserved" // 0/8, 192.0.0/24, 198.18/15, 240/4, 100::/64
)

// privateClasses are the classes an operator may allow for a deployment
// whose files live on its own network (Options.AllowPrivate). The others
// are never a file server.
var privateClasses = map[Class]bool{Loopback: true, Private: true, UniqueLocal: true, LinkLocal: true, Shared: true}

// metadata are the instance-metadata endpoints of the common clouds; they
// are refused even when private networks are allowed.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, DigitalOcean...
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
}

var prefixes = []struct {
	p netip.Prefix
	c Class
}{
	{netip.MustParsePrefix("0.0.0.0/8"), Reserved},
	{netip.MustParsePrefix("10.0.0.0/8"), Private},
	{netip.MustParsePrefix("100.64.0.0/10"), Shared},
	{netip.MustParsePrefix("127.0.0.0/8"), Loopback},
	{netip.MustParsePrefix("169.254.0.0/16"), LinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), Private},
	{netip.MustParsePrefix("192.0.0.0/24"), Reserved},
	{netip.MustParsePrefix("192.168.0.0/16"), Private},
	{netip.MustParsePrefix("198.18.0.0/15"), Reserved},
	{netip.MustParsePrefix("224.0.0.0/4"), Multicast},
	{netip.MustParsePrefix("240.0.0.0/4"), Reserved},
	{netip.MustParsePrefix("::1/128"), Loopback},
	{netip.MustParsePrefix("100::/64"), Reserved},
	{netip.MustParsePrefix("fc00::/7"), UniqueLocal},
	{netip.MustParsePrefix("fe80::/10"), LinkLocal},
	{netip.MustParsePrefix("fec0::/10"), Private},
	{netip.MustParsePrefix("ff00::/8"), Multicast},
}

// IPv6 prefixes that carry an IPv4 address: it is classified instead.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Classify returns the class of a non-public address and true, or "" and
// false for a public one. An IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) IPv6 address is classified by the IPv4 address it carries.
func Classify(ip netip.Addr) (Class, bool) {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			ip = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(ip):
			ip = netip.AddrFrom4([4]byte(b[2:6]))
		}
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified():
		return Unspecified, true
	case ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Broadcast, true
	}
	for _, m := range metadata {
		if ip == m {
			return Metadata, true
		}
	}
	for _, p := range prefixes {
		if p.p.Contains(ip) {
			return p.c, true
		}
	}
	return "", false
}

// BlockedError reports a connection refused because of its address. It
// names the address and its class; it never carries the URL that led to it.
type BlockedError struct {
	Addr  netip.Addr
	Class Class
}

func (e *BlockedError) Error() string {
	if privateClasses[e.Class] {
		return fmt.Sprintf("address %s is %s, not a public address (private networks are not allowed)", e.Addr, e.Class)
	}
	return fmt.Sprintf("address %s is %s, not a public address", e.Addr, e.Class)
}

// ErrBlocked is matched by every *BlockedError (errors.Is).
var ErrBlocked = errors.New("netguard: address not allowed")

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Check returns a *BlockedError when ip may not be dialed: any non-public
// address, or with allowPrivate only the classes that are never a file
// server (metadata, multicast, broadcast, unspecified, reserved).
func Check(ip netip.Addr, allowPrivate bool) error {
	c, blocked := Classify(ip)
	if !blocked || (allowPrivate && privateClasses[c]) {
		return nil
	}
	return &BlockedError{Addr: ip.WithZone(""), Class: c}
}

// Control returns a net.Dialer Control function that refuses a socket
// whose remote address fails [Check]. It runs after name resolution, for
// every address a dial tries.
func Control(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("netguard: %s address %q: %w", network, address, err)
		}
		return Check(ap.Addr(), allowPrivate)
	}
}

// Dialer dials TCP connections to public addresses only. The zero value
// is usable: it resolves names with net.DefaultResolver and dials with a
// plain net.Dialer.
type Dialer struct {
	// AllowPrivate also allows loopback, private, unique-local,
	// link-local and shared addresses (never metadata, multicast,
	// broadcast, unspecified or reserved ones).
	AllowPrivate bool
	// Dialer is the base of every dial (timeouts, keep-alive); its
	// Control is replaced by the guard's. nil uses a zero net.Dialer.
	Dialer *net.Dialer
	// Lookup resolves a host name; nil uses
	// net.DefaultResolver.LookupNetIP. A test seam, like Connect.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Connect dials one checked address (an IP literal and port); nil
	// dials it with Dialer, whose Control checks it once more. A test may
	// replace it to reach a loopback server standing in for a public one.
	Connect func(ctx context.Context, network, address string) (net.Conn, error)
}

// DialContext resolves address's host, refuses every address that fails
// [Check] and dials the others in order until one connects. When every
// address is refused it returns the first *BlockedError.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: %w", err)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		lookup := d.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if addrs, err = lookup(ctx, host); err != nil {
			return nil, fmt.Errorf("netguard: resolve %s: %w", host, err)
		}
	}
	var first error
	for _, ip := range addrs {
		if err := Check(ip, d.AllowPrivate); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		conn, err := d.connect(ctx, network, ip.String(), port)
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = fmt.Errorf("netguard: %s has no address", host)
	}
	return nil, first
}

func (d *Dialer) connect(ctx context.Context, network, ip, port string) (net.Conn, error) {
	address := net.JoinHostPort(ip, port)
	if d.Connect != nil {
		return d.Connect(ctx, network, address)
	}
	var nd net.Dialer
	if d.Dialer != nil {
		nd = *d.Dialer
	}
	nd.Control, nd.ControlContext = Control(d.AllowPrivate), nil
	return nd.DialContext(ctx, network, address)
}
