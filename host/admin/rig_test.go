package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connectors/webchat"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Secrets of the rig: none may appear on the page or its stream.
const (
	testToken   = "operator-token-9f3a-2c7e"
	testAPIKey  = "connector-api-key-5d1b-77"
	testRoomKey = "room-access-code-4e2a"
)

// rig is the web chat connector, a host with the echo agent and its
// operator page, over loopback sockets, the page wired to the host's hooks
// as "xconn host --admin" wires it.
type rig struct {
	t       *testing.T
	host    *host.Host
	admin   *Admin
	url     string // the operator page
	chatURL string // the web chat connector
	signins []*host.Signin
}

func newRig(t *testing.T, mod func(*Options)) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	r := &rig{t: t}
	cdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "webchat.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cdb.Close() })
	hdb, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "host.db"), store.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hdb.Close() })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.chatURL = "http://" + ln.Addr().String()
	conn, err := webchat.New(webchat.Options{SDK: connector.Options{Store: cdb, APIKey: testAPIKey, DataDir: filepath.Join(dir, "files"),
		Logger: slog.New(slog.DiscardHandler)},
		PublicURL: r.chatURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Server().Start(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, stopConn := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- conn.Server().Serve(cctx, ln) }()

	// The page exists before the host so that the host's hooks reach it.
	var a *Admin
	var aMu sync.Mutex
	page := func() *Admin { aMu.Lock(); defer aMu.Unlock(); return a }
	h, err := host.New(host.Options{Store: hdb, Delivery: hdb, Agent: host.Echo{}, FilesDir: filepath.Join(dir, "host-files"),
		OnEvent: func(ev host.Event) {
			if p := page(); p != nil {
				p.OnEvent(ev)
			}
		},
		OnPacket: func(d protocol.Direction, card string, env *protocol.Envelope) {
			if p := page(); p != nil {
				p.OnPacket(d, card, env)
			}
		},
		ReconnectMin: 20 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Host: h, Token: testToken, Version: "v0.test", Refresh: 100 * time.Millisecond,
		Redact: func(s string) string {
			for _, sec := range []string{testAPIKey, testRoomKey, testToken} {
				s = strings.ReplaceAll(s, sec, "[redacted]")
			}
			return s
		}}
	if mod != nil {
		mod(&o)
	}
	aMu.Lock()
	a, err = New(o)
	aMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r.host, r.admin = h, a
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.url = "http://" + aln.Addr().String()
	actx, stopAdmin := context.WithCancel(context.Background())
	adminDone := make(chan error, 1)
	go func() { adminDone <- a.Serve(actx, aln) }()
	t.Cleanup(func() {
		stopAdmin()
		if err := <-adminDone; err != nil {
			t.Errorf("admin serve: %v", err)
		}
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		for _, s := range r.signins {
			_ = s.Cancel(sctx)
		}
		if err := h.Close(sctx); err != nil {
			t.Errorf("host close: %v", err)
		}
		stopConn()
		if err := <-served; err != nil {
			t.Errorf("connector: %v", err)
		}
	})
	if _, err := h.Admit(ctx, r.chatURL, testAPIKey); err != nil {
		t.Fatalf("admit: %v", err)
	}
	for {
		if c, ok := h.Connector(webchat.CardID); ok && c.Link == host.LinkOnline {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the data plane did not come online")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

// room signs user in to a room and posts one message into it as a
// browser in the room would; it returns the channel.
func (r *rig) room(user, room string) store.UserChannel {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := r.host.Connect(ctx, user, webchat.CardID, webchat.FlowRoom, map[string]string{"room": room, "access_code": testRoomKey})
	if err != nil {
		t.Fatalf("connect room: %v", err)
	}
	uc, err := si.Wait(ctx)
	if err != nil {
		t.Fatalf("room sign-in: %v", err)
	}
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Jar: jar, Transport: tr, Timeout: 10 * time.Second}
	res, err := c.PostForm(r.chatURL+"/webchat/rooms/"+room, url.Values{"access_code": {testRoomKey}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	body, _ := json.Marshal(map[string]string{"text": "hello operator"})
	res, err = c.Post(r.chatURL+"/webchat/api/messages?room="+room, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %s", res.Status)
	}
	return uc
}

// qr starts a QR sign-in, tracked by the page, and waits for its code.
func (r *rig) qr(user string) *host.Signin {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	si, err := r.host.Connect(ctx, user, webchat.CardID, webchat.FlowQR, nil)
	if err != nil {
		t.Fatalf("connect qr: %v", err)
	}
	r.signins = append(r.signins, si)
	r.admin.TrackSignin(si)
	for si.State().QRCodeText == "" && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	return si
}

// get fetches path of the page with header h set; it returns the status
// and the body.
func (r *rig) get(path string, h http.Header) (int, string, http.Header) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.url+path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// noSecrets fails when s holds a secret of the rig.
func noSecrets(t *testing.T, where, s string) {
	t.Helper()
	for _, sec := range []string{testToken, testAPIKey, testRoomKey, "/webchat/login/", "hello operator"} {
		if strings.Contains(s, sec) {
			t.Errorf("%s contains %q", where, sec)
		}
	}
}
