package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xconn/xconn/connector/connectortest/e2e"
	"github.com/xconn/xconn/protocol"
)

// TestRevoked: when Telegram starts refusing the token (401), the poller
// moves the channel to revoked and pushes its Descriptor; a final is then
// not accepted; after a restart the restored channel is still revoked.
func TestRevoked(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	e2e.Eventually(t, "polling", func() bool { return f.Calls(testToken, "getUpdates") > 0 })
	f.Revoke(testToken)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	push, err := cl.NextMatch(ctx, func(e *protocol.Envelope) bool {
		var p protocol.DescriptorPayload
		return e.Type == protocol.TypeDescriptorPush && e.DecodePayload(&p) == nil && p.ConnectionDescriptor != nil &&
			p.ConnectionDescriptor.Connection.Status == protocol.StatusRevoked
	})
	if err != nil {
		t.Fatalf("no revoked Descriptor push: %v", err)
	}
	if strings.Contains(string(push.Payload), testToken) {
		t.Fatal("token in the Descriptor")
	}
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "after-revoke", Text: "hi"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || *a.Retryable {
		t.Fatalf("ack %+v, want rejected, not retryable", a)
	}
	cl.Close()
	cn.Stop()

	cn = startConn(t, dir, api, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), wait)
	defer cancel2()
	start := time.Now()
	open, err := cl.Open(ctx2, ch)
	if err != nil {
		t.Fatalf("after %v: %v\n%s", time.Since(start), err, cn.Logs.String())
	}
	if st := open.ConnectionDescriptor.Connection.Status; st != protocol.StatusRevoked && st != protocol.StatusExpired {
		t.Fatalf("restored channel %s, want revoked (or expired)", st)
	}
}

// TestRevokedOnSend: a 401 answering a delivery revokes the channel too.
func TestRevokedOnSend(t *testing.T) {
	f, api := newFake(t)
	cn := startConn(t, t.TempDir(), api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	f.FailNext(testToken, "sendMessage", 401, "Unauthorized", 0)
	a := cl.Final(ch, protocol.ChatMessagePayload{MessageID: "m401", Text: "hi"})
	if a.Status != protocol.AckRejected || a.Retryable == nil || *a.Retryable || a.Code != string(protocol.CodeConnectionNotAuthenticated) {
		t.Fatalf("ack %+v", a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cl.NextMatch(ctx, func(e *protocol.Envelope) bool {
		return e.Type == protocol.TypeDescriptorPush && strings.Contains(string(e.Payload), `"status":"revoked"`)
	}); err != nil {
		t.Fatalf("no revoked Descriptor push: %v", err)
	}
}

// TestTransportErrorRedacted: a transport failure's error (whose
// *url.Error would hold the request URL) names the method and the cause
// but not the token, keeps context errors matchable, and a sign-in while
// the Bot API is unreachable says so without the token.
func TestTransportErrorRedacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	c, err := New(Options{SDK: connectorOptions(t), APIURL: dead})
	if err != nil {
		t.Fatal(err)
	}
	err = c.api.call(t.Context(), testToken, "getMe", struct{}{}, nil)
	if err == nil || strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "getMe") ||
		!strings.Contains(err.Error(), "[REDACTED]") || !isTemporary(err) {
		t.Fatalf("error %q", err)
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testToken) || strings.Contains(fmt.Sprintf("%+v %#v", e, e), testToken) {
			t.Fatalf("token in a wrapped error %T", e)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.api.call(ctx, testToken, "getMe", struct{}{}, nil); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), testToken) {
		t.Fatalf("canceled call: %v", err)
	}
	if _, err := c.api.download(t.Context(), testToken, "photos/file_1.jpg", 10); err == nil || strings.Contains(err.Error(), testToken) {
		t.Fatalf("download error %q", err)
	}

	cn := startConn(t, t.TempDir(), dead, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	open, err := cl.Open(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.SignInForm(t.Context(), open.ConnectorChannelID, FlowBot, login)
	if err == nil || !strings.Contains(err.Error()+signInMessage(err), "cannot be reached") {
		t.Fatalf("sign-in: %v %s", err, signInMessage(err))
	}
	for _, frame := range cl.Transcript() {
		if strings.Contains(frame, testToken) {
			t.Fatalf("token in %s", frame)
		}
	}
	// cn.stop checks the logs.
}

// TestRevokedWhileStopped: a token revoked while the connector was down
// makes the restored channel expired (the client constructor's getMe
// gets 401 and wraps connector.ErrBindingExpired).
func TestRevokedWhileStopped(t *testing.T) {
	f, api := newFake(t)
	dir := t.TempDir()
	cn := startConn(t, dir, api, "127.0.0.1:0", nil)
	cl := cn.Dial(t)
	ch, _ := cl.SignIn(FlowBot, login)
	cl.Close()
	cn.Stop()
	f.Revoke(testToken)
	cn = startConn(t, dir, api, "127.0.0.1:0", nil)
	cl = cn.Dial(t)
	var st protocol.ConnectionStatus
	e2e.Eventually(t, "expired", func() bool {
		open, err := cl.Open(t.Context(), ch)
		if err != nil {
			t.Fatal(err)
		}
		st = open.ConnectionDescriptor.Connection.Status
		return st == protocol.StatusExpired
	})
}
