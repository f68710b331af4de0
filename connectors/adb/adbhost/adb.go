// Package adbhost is a small client of the Android Debug Bridge host protocol:
// the protocol an adb client speaks to the ADB server (by default on
// 127.0.0.1:5037), which forwards requests to the attached devices. It is
// what the device.adb connector uses; it is not a general adb replacement.
//
// The wire format (from the Android source, adb/docs/dev/services.md and
// protocol.txt): a request is its length as four lowercase or uppercase
// hexadecimal digits followed by the request text ("000chost:version").
// The server answers "OKAY" or "FAIL"; a FAIL is followed by a
// length-prefixed message. Host services (host:version, host:devices-l)
// answer with one length-prefixed payload; host:transport:<serial>
// switches the connection to one device, after which one local service
// (exec:, shell:) streams its raw output until the connection closes.
//
// Every request uses a fresh TCP connection, so requests run in parallel
// without sharing state; a [Client] is safe for concurrent use. Every read
// is bounded (payloads by [MaxPayload], command output by the caller's
// limit) and every connection carries the deadline of its context.
package adbhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultAddr is where the ADB server listens by default.
const DefaultAddr = "127.0.0.1:5037"

// MaxPayload bounds one length-prefixed payload (a FAIL message, a device
// list): four hex digits cannot say more than 65535 bytes.
const MaxPayload = 0xffff

// DefaultDialTimeout bounds connecting to the ADB server when the context
// has no earlier deadline.
const DefaultDialTimeout = 5 * time.Second

// Kind classifies an [Error].
type Kind int

// Error kinds.
const (
	// KindFail is a FAIL answer that none of the other kinds explains.
	KindFail Kind = iota
	// KindNotFound: the server does not know the serial (detached).
	KindNotFound
	// KindOffline: the device is attached but offline.
	KindOffline
	// KindUnauthorized: the device has not accepted this computer's RSA
	// key (the "Allow USB debugging?" prompt).
	KindUnauthorized
	// KindNoPermissions: the host's USB permissions do not allow access
	// (udev rules on Linux).
	KindNoPermissions
	// KindUnreachable: the ADB server cannot be reached.
	KindUnreachable
	// KindProtocol: the server's answer does not follow the protocol.
	KindProtocol
)

func (k Kind) String() string {
	switch k {
	case KindNotFound:
		return "not found"
	case KindOffline:
		return "offline"
	case KindUnauthorized:
		return "unauthorized"
	case KindNoPermissions:
		return "no permissions"
	case KindUnreachable:
		return "unreachable"
	case KindProtocol:
		return "protocol error"
	}
	return "fail"
}

// Error is a failure reported by the ADB server (a FAIL answer) or of
// talking to it. Message is the server's text (or a description) and
// holds no secrets: the protocol carries none.
type Error struct {
	Kind    Kind
	Message string
	// Err is the underlying error, if any (a dial error, a read error).
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "adb: " + e.Message + ": " + e.Err.Error()
	}
	return "adb: " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of the *Error in err's chain, and false when
// there is none.
func KindOf(err error) (Kind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

// ErrOutputLimit is returned (wrapped) with the first limit bytes of a
// command's output when the command wrote more.
var ErrOutputLimit = errors.New("adb: command output exceeds the limit")

// classifyFail turns a FAIL message into an *Error of the matching kind.
// The texts are the ADB server's own (adb/transport.cpp, adb/adb.cpp).
func classifyFail(msg string) *Error {
	m := strings.ToLower(msg)
	k := KindFail
	switch {
	case strings.Contains(m, "unauthorized"):
		k = KindUnauthorized
	case strings.Contains(m, "insufficient permissions") || strings.Contains(m, "no permissions"):
		k = KindNoPermissions
	case strings.Contains(m, "not found") || strings.Contains(m, "no devices"):
		k = KindNotFound
	case strings.Contains(m, "offline"):
		k = KindOffline
	}
	return &Error{Kind: k, Message: msg}
}

// Client talks to one ADB server. The zero value is not usable; create it
// with [New]. Safe for concurrent use: each request has its own connection.
type Client struct {
	addr   string
	dialer net.Dialer
}

// New returns a client of the ADB server at addr (host:port; "" means
// [DefaultAddr]).
func New(addr string) (*Client, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("adb: server address %q: %w", addr, err)
	}
	return &Client{addr: addr}, nil
}

// Addr returns the server address.
func (c *Client) Addr() string { return c.addr }

// dial connects to the server with ctx's deadline on the connection.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	dctx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, DefaultDialTimeout)
		defer cancel()
	}
	conn, err := c.dialer.DialContext(dctx, "tcp", c.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Kind: KindUnreachable, Message: "cannot reach the ADB server at " + c.addr, Err: err}
	}
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	return conn, nil
}

// request opens a connection, ties it to ctx (closing it when ctx ends)
// and sends req, reading the OKAY. The caller closes the returned conn
// and calls stop.
func (c *Client) request(ctx context.Context, req string) (net.Conn, func() bool, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	if err := send(ctx, conn, req); err != nil {
		stop()
		conn.Close()
		return nil, nil, err
	}
	return conn, stop, nil
}

// send writes one request and reads its status.
func send(ctx context.Context, conn net.Conn, req string) error {
	if _, err := io.WriteString(conn, EncodeRequest(req)); err != nil {
		return ioError(ctx, "send "+requestName(req), err)
	}
	if err := ReadStatus(conn); err != nil {
		return ioError(ctx, requestName(req), err)
	}
	return nil
}

// requestName is what an error names a request by: its service, without
// arguments a user typed (a command line is not logged).
func requestName(req string) string {
	switch {
	case strings.HasPrefix(req, "host:transport:"):
		return "host:transport"
	case strings.HasPrefix(req, "exec:"):
		return "exec"
	case strings.HasPrefix(req, "shell:"):
		return "shell"
	}
	return req
}

// ioError wraps a read or write failure; a context end takes precedence.
func ioError(ctx context.Context, what string, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("adb: %s: %w", what, ctx.Err())
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("adb: %s: %w", what, context.DeadlineExceeded)
	}
	return fmt.Errorf("adb: %s: %w", what, err)
}

// EncodeRequest frames a request: four hex digits of length, then the text.
func EncodeRequest(req string) string {
	return fmt.Sprintf("%04x%s", len(req), req)
}

// ReadStatus reads "OKAY" (nil) or "FAIL" and its message (an *Error).
func ReadStatus(r io.Reader) error {
	var st [4]byte
	if _, err := io.ReadFull(r, st[:]); err != nil {
		return err
	}
	switch string(st[:]) {
	case "OKAY":
		return nil
	case "FAIL":
		msg, err := ReadPayload(r)
		if err != nil {
			return &Error{Kind: KindProtocol, Message: "FAIL without a readable message", Err: err}
		}
		return classifyFail(string(msg))
	}
	return &Error{Kind: KindProtocol, Message: fmt.Sprintf("status %q is neither OKAY nor FAIL", st[:])}
}

// ReadPayload reads one length-prefixed payload (at most MaxPayload bytes).
func ReadPayload(r io.Reader) ([]byte, error) {
	var hx [4]byte
	if _, err := io.ReadFull(r, hx[:]); err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(string(hx[:]), 16, 16)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Message: fmt.Sprintf("length %q is not four hex digits", hx[:])}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// host runs a host service that answers with one payload.
func (c *Client) host(ctx context.Context, req string) ([]byte, error) {
	conn, stop, err := c.request(ctx, req)
	if err != nil {
		return nil, err
	}
	defer stop()
	defer conn.Close()
	b, err := ReadPayload(conn)
	if err != nil {
		return nil, ioError(ctx, req, err)
	}
	return b, nil
}

// Version returns the server's protocol version (host:version).
func (c *Client) Version(ctx context.Context) (int, error) {
	b, err := c.host(ctx, "host:version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil {
		return 0, &Error{Kind: KindProtocol, Message: fmt.Sprintf("version %q is not hexadecimal", b)}
	}
	return int(v), nil
}

// Devices lists the attached devices with their attributes
// (host:devices-l).
func (c *Client) Devices(ctx context.Context) ([]Device, error) {
	b, err := c.host(ctx, "host:devices-l")
	if err != nil {
		return nil, err
	}
	return ParseDevices(b)
}

// Device returns the device with serial, or an *Error of KindNotFound.
func (c *Client) Device(ctx context.Context, serial string) (Device, error) {
	ds, err := c.Devices(ctx)
	if err != nil {
		return Device{}, err
	}
	for _, d := range ds {
		if d.Serial == serial {
			return d, nil
		}
	}
	return Device{}, &Error{Kind: KindNotFound, Message: "device not found"}
}

// Exec runs argv on the device with the exec: service (no terminal, so
// binary output such as a PNG arrives unchanged) and returns its output,
// at most limit bytes: beyond it, the first limit bytes and an error
// wrapping ErrOutputLimit. The device's exec: service runs the command
// line through its shell, so every argument is quoted with [Quote]: no
// argument is ever interpreted by the shell. ctx bounds the whole call;
// when it ends the connection is closed.
func (c *Client) Exec(ctx context.Context, serial string, limit int64, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("adb: exec: empty command")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("adb: exec: an argument holds a NUL byte")
		}
	}
	return c.run(ctx, serial, "exec:"+CommandLine(argv), limit)
}

// run switches to serial's transport, starts service and reads its
// output until EOF.
func (c *Client) run(ctx context.Context, serial, service string, limit int64) ([]byte, error) {
	if serial == "" || strings.ContainsAny(serial, "\x00\n") {
		return nil, errors.New("adb: invalid serial")
	}
	conn, stop, err := c.request(ctx, "host:transport:"+serial)
	if err != nil {
		return nil, err
	}
	defer stop()
	defer conn.Close()
	if err := send(ctx, conn, service); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(conn, limit+1))
	if err != nil {
		return b, ioError(ctx, requestName(service)+" output", err)
	}
	if int64(len(b)) > limit {
		return b[:limit], fmt.Errorf("%w (%d bytes)", ErrOutputLimit, limit)
	}
	return b, nil
}

// Quote returns arg quoted for a POSIX shell: unchanged when it consists
// only of characters no shell treats specially, else in single quotes
// in which each single quote ends the quoted part, is escaped with a
// backslash and opens a new one.
func Quote(arg string) string {
	if arg == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(arg); i++ {
		ch := arg[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("-_./:@%+,", ch) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// CommandLine joins argv into one shell command line, each word quoted.
func CommandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
