package connector_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
)

// phone is the fake device behind the device test connector: control
// calls are logged in order, a gate can hold them, and the observation
// tool reads a counter.
type phone struct {
	mu      sync.Mutex
	acts    []string
	running int // control calls running now
	overlap bool
	gate    chan struct{} // when non-nil, control calls wait for it
	entered chan string   // receives the label of each control call that starts
	starts  int           // control calls started
}

func (p *phone) act(ctx context.Context, label string) error {
	p.mu.Lock()
	p.starts++
	p.running++
	if p.running > 1 {
		p.overlap = true
	}
	gate := p.gate
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running--
		p.mu.Unlock()
	}()
	select {
	case p.entered <- label:
	default:
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	p.acts = append(p.acts, label)
	p.mu.Unlock()
	if label == "slowfail" {
		return protocol.Errorf(connector.CodeDeviceCommandTimeout, "the device was too slow")
	}
	return nil
}

func (p *phone) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acts)
}

type devLogin struct {
	Serial string `json:"serial" label:"Serial"`
}

type devBinding struct {
	Serial string `json:"serial"`
}

const devKey = "device-test-key-0123456789"

// startDevice serves a device connector with an observation tool
// (dev_status), a control tool (dev_tap) and a serial tool (dev_note).
func startDevice(t *testing.T, p *phone) (*connector.Server, string) {
	t.Helper()
	srv, err := connector.New(connector.Options{APIKey: devKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "device.fake", Name: "Fake Phone", Provider: "fake", TargetType: protocol.TargetDevice}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(connector.AddForm(srv, "fake_binding", func(ctx context.Context, ch *connector.Channel, in devLogin) (connector.Account[devBinding], error) {
		return connector.Account[devBinding]{Binding: devBinding{Serial: in.Serial}, DisplayName: "Phone"}, nil
	}, connector.FlowOptions{Default: true}))
	_, err = connector.SetClient(srv, func(ctx context.Context, ch *connector.Channel, b devBinding, _ connector.ClientReason) (*phone, error) {
		return p, nil
	})
	must(err)
	type tapIn struct {
		Label string `json:"label"`
	}
	must(connector.AddTool(srv, "dev_status", func(ctx context.Context, call *connector.Call, _ struct{}) (map[string]int, error) {
		return map[string]int{"acts": len(p.log())}, nil
	}, connector.ToolOptions{Mode: connector.ToolObserve, Profile: protocol.ProfileDeviceV1}))
	must(connector.AddTool(srv, "dev_tap", func(ctx context.Context, call *connector.Call, in tapIn) (map[string]string, error) {
		if err := p.act(ctx, in.Label); err != nil {
			return nil, err
		}
		return map[string]string{"tapped": in.Label}, nil
	}, connector.ToolOptions{Mode: connector.ToolAct, Profile: protocol.ProfileDeviceV1}))
	must(connector.AddTool(srv, "dev_note", func(ctx context.Context, call *connector.Call, _ struct{}) (map[string]bool, error) {
		return map[string]bool{"ok": true}, nil
	}, connector.ToolOptions{Profile: protocol.ProfileDeviceV1}))
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv, hs.URL
}

func deviceChannel(t *testing.T, base string) (*connectortest.Client, string) {
	t.Helper()
	ctx := testCtx(t)
	c, _, err := connectortest.Connect(ctx, base, devKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.SignInForm(ctx, ack.ConnectorChannelID, "fake_binding", map[string]string{"serial": "S1"})
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in: %+v, %v", st, err)
	}
	return c, ack.ConnectorChannelID
}

// TestDeviceObserveBesideAct: while a control call is held, an
// observation on the same channel answers; further control calls wait
// and then run one at a time in arrival order; a serial tool still
// answers in the channel's order.
func TestDeviceObserveBesideAct(t *testing.T) {
	p := &phone{gate: make(chan struct{}), entered: make(chan string, 8)}
	_, base := startDevice(t, p)
	c, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	errs := make(chan error, 3)
	for i, label := range []string{"first", "second", "third"} {
		go func() {
			_, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": label}, fmt.Sprintf("call-%d", i))
			errs <- err
		}()
		if i == 0 {
			if got := <-p.entered; got != "first" {
				t.Fatalf("first control call to start: %s", got)
			}
		}
	}
	// The first act is held: an observation still answers, and so does a
	// serial tool behind it in the channel's queue.
	res, err := c.InvokeRaw(ctx, ch, "dev_status", nil, "obs-1")
	if err != nil || string(res) != `{"acts":0}` {
		t.Fatalf("observation during a held act: %s, %v", res, err)
	}
	if _, err := c.InvokeRaw(ctx, ch, "dev_note", nil, ""); err != nil {
		t.Fatalf("serial tool during a held act: %v", err)
	}
	close(p.gate)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := p.log()
	if len(got) != 3 || got[0] != "first" {
		t.Fatalf("acts %v", got)
	}
	p.mu.Lock()
	overlap := p.overlap
	p.mu.Unlock()
	if overlap {
		t.Fatal("two control calls ran at once")
	}
	checkWire(t, c)
}

// TestDeviceActOrder: control calls sent back to back run in the order
// they were sent.
func TestDeviceActOrder(t *testing.T) {
	p := &phone{entered: make(chan string, 64)}
	_, base := startDevice(t, p)
	c, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	var want []string
	var envs []*protocol.Envelope
	for i := range 10 {
		label := fmt.Sprintf("a%d", i)
		want = append(want, label)
		env, err := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: "dev_tap",
			Arguments: []byte(fmt.Sprintf(`{"connector_channel_id":%q,"label":%q}`, ch, label)), Context: &protocol.ToolContext{ToolCallID: label}})
		if err != nil {
			t.Fatal(err)
		}
		env.RequestID = "req-" + label
		envs = append(envs, env)
	}
	// Sent back to back, in order, on one socket.
	for _, env := range envs {
		if err := c.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	for _, env := range envs {
		ack, err := c.NextMatch(ctx, func(a *protocol.Envelope) bool {
			return a.Type == protocol.TypeToolInvokeAck && a.RequestID == env.RequestID
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := connectortest.AckError(ack); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.log(); !slices.Equal(got, want) {
		t.Fatalf("acts ran in order %v, want %v", got, want)
	}
}

// TestDeviceActIdempotent: a repeated tool_call_id returns the first
// result and does not act again, also when the first outcome was a
// device error; another id acts again; other arguments conflict.
func TestDeviceActIdempotent(t *testing.T) {
	p := &phone{entered: make(chan string, 8)}
	_, base := startDevice(t, p)
	c, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	first, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "ok"}, "tc-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "ok"}, "tc-1")
	if err != nil || string(again) != string(first) {
		t.Fatalf("repeat: %s, %v; want %s", again, err, first)
	}
	if _, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "slowfail"}, "tc-2"); !isCode(err, connector.CodeDeviceCommandTimeout) {
		t.Fatalf("failing act: %v", err)
	}
	if _, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "slowfail"}, "tc-2"); !isCode(err, connector.CodeDeviceCommandTimeout) {
		t.Fatalf("repeat of a failed act: %v", err)
	}
	if _, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "other"}, "tc-1"); !isCode(err, protocol.CodeToolCallConflict) {
		t.Fatalf("same id, other arguments: %v", err)
	}
	if _, err := c.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "ok"}, "tc-3"); err != nil {
		t.Fatal(err)
	}
	if got := p.log(); !slices.Equal(got, []string{"ok", "slowfail", "ok"}) {
		t.Fatalf("acts %v", got)
	}
}

// TestDeviceState: SetDeviceState corrects and pushes the Descriptor
// (offline: tools unavailable; permission denied: tools denied by the
// target), calls are refused with the matching device code, and the
// device coming back restores connected.
func TestDeviceState(t *testing.T) {
	p := &phone{entered: make(chan string, 8)}
	srv, base := startDevice(t, p)
	c, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	h, err := srv.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.DeviceState(); got != connector.DeviceAvailable {
		t.Fatalf("state after sign-in: %q", got)
	}
	for _, tc := range []struct {
		state  connector.DeviceState
		status protocol.ConnectionStatus
		tool   protocol.ToolStatus
		perm   protocol.PermissionState
		code   protocol.Code
	}{
		{connector.DeviceOffline, protocol.StatusOffline, protocol.ToolUnavailable, protocol.PermissionUnknown, connector.CodeDeviceOffline},
		{connector.DevicePermissionDenied, protocol.StatusOffline, protocol.ToolDeniedByTarget, protocol.PermissionDenied, connector.CodeDevicePermissionDenied},
		{connector.DeviceAvailable, protocol.StatusConnected, protocol.ToolAvailable, protocol.PermissionGranted, ""},
	} {
		drainPushes(c)
		if err := h.SetDeviceState(ctx, tc.state, "because of "+string(tc.state)); err != nil {
			t.Fatal(err)
		}
		env, err := c.NextMatch(ctx, func(env *protocol.Envelope) bool {
			var p protocol.DescriptorPayload
			return env.Type == protocol.TypeDescriptorPush && env.DecodePayload(&p) == nil &&
				p.ConnectionDescriptor != nil && p.ConnectionDescriptor.Connection.Status == tc.status
		})
		if err != nil {
			t.Fatalf("%s: no Descriptor push with status %s: %v", tc.state, tc.status, err)
		}
		d := decode[protocol.DescriptorPayload](t, env).ConnectionDescriptor
		if d.Connection.Status != tc.status || d.Connection.TargetType != protocol.TargetDevice {
			t.Fatalf("%s: connection %+v", tc.state, d.Connection)
		}
		for _, ts := range d.Tools {
			if ts.Status != tc.tool || ts.TargetPermissionState != tc.perm {
				t.Fatalf("%s: tool %+v", tc.state, ts)
			}
			if tc.state != connector.DeviceAvailable && !strings.Contains(ts.Reason, string(tc.state)) {
				t.Fatalf("%s: reason %q", tc.state, ts.Reason)
			}
		}
		if got := h.DeviceState(); got != tc.state {
			t.Fatalf("DeviceState %q, want %q", got, tc.state)
		}
		for _, tool := range []string{"dev_status", "dev_tap", "dev_note"} {
			_, err := c.InvokeRaw(ctx, ch, tool, map[string]string{"label": "x"}, "st-"+string(tc.state)+tool)
			if tool != "dev_tap" {
				_, err = c.InvokeRaw(ctx, ch, tool, nil, "")
			}
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("%s on an available device: %v", tool, err)
			case tc.code != "" && !isCode(err, tc.code):
				t.Fatalf("%s while %s: %v, want %s", tool, tc.state, err, tc.code)
			}
		}
		// The same state again changes nothing and pushes nothing.
		if err := h.SetDeviceState(ctx, tc.state, "because of "+string(tc.state)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.log()); n != 1 {
		t.Fatalf("%d acts ran, want the one on the available device", n)
	}
	if err := h.SetDeviceState(ctx, "melted", ""); err == nil {
		t.Fatal("an unknown state was accepted")
	}
	checkWire(t, c)
}

// TestDeviceMedia: CacheMedia stores a file whose signed download_url
// serves it; DeleteFile removes it before its TTL.
func TestDeviceMedia(t *testing.T) {
	srv, base := startDevice(t, &phone{})
	_, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	h, err := srv.Channel(ch)
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.CacheMedia(ctx, connector.OutgoingFile{Name: "shot.png", MimeType: "image/png", Content: strings.NewReader("\x89PNG fake")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.FileRef == "" || f.DownloadURL == "" || f.Type != protocol.FileImage {
		t.Fatalf("file %+v", f)
	}
	get := func() (int, string) {
		u := f.DownloadURL
		if strings.HasPrefix(u, "/") {
			u = base + u
		}
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || body != "\x89PNG fake" {
		t.Fatalf("download: %d %q", code, body)
	}
	if err := h.DeleteFile(ctx, f.FileRef); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(); code == 200 {
		t.Fatal("a deleted file still downloads")
	}
	if err := h.DeleteFile(ctx, "file_unknown"); err != nil {
		t.Fatalf("deleting an unknown ref: %v", err)
	}
}

// drainPushes drops the Descriptor pushes received so far.
func drainPushes(c *connectortest.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for {
		if _, err := c.NextMatch(ctx, func(env *protocol.Envelope) bool { return env.Type == protocol.TypeDescriptorPush }); err != nil {
			return
		}
	}
}

// TestDeviceActSocketLost: the socket closes while a control call runs;
// xAgent retries it with the same tool_call_id on a new socket and gets the
// first outcome, without a second action.
func TestDeviceActSocketLost(t *testing.T) {
	p := &phone{gate: make(chan struct{}), entered: make(chan string, 8)}
	_, base := startDevice(t, p)
	c, ch := deviceChannel(t, base)
	ctx := testCtx(t)
	env, err := connectortest.Packet(protocol.TypeToolInvoke, ch, protocol.ToolInvokePayload{ToolID: "dev_tap",
		Arguments: []byte(fmt.Sprintf(`{"connector_channel_id":%q,"label":"once"}`, ch)), Context: &protocol.ToolContext{ToolCallID: "lost-1"}})
	if err != nil {
		t.Fatal(err)
	}
	env.RequestID = "req-lost-1"
	if err := c.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	if got := <-p.entered; got != "once" {
		t.Fatalf("started %s", got)
	}
	c.Close() // the handler's context ends with its socket: the outcome is a timeout
	c2, _, err := connectortest.Connect(ctx, base, devKey)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Open(ctx, ch); err != nil {
		t.Fatal(err)
	}
	var first error
	eventually(t, "the retry answered", func() bool {
		_, first = c2.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "once"}, "lost-1")
		return first == nil || !isCode(first, protocol.CodeConnectorChannelUnavailable)
	})
	for range 2 {
		_, err := c2.InvokeRaw(ctx, ch, "dev_tap", map[string]string{"label": "once"}, "lost-1")
		if protocol.CodeOf(err, "") != protocol.CodeOf(first, "") {
			t.Fatalf("repeat: %v, first %v", err, first)
		}
	}
	p.mu.Lock()
	starts := p.starts
	p.mu.Unlock()
	if starts != 1 || first == nil {
		t.Fatalf("the control call started %d times (first answer to the retry: %v); want once, its outcome replayed", starts, first)
	}
}
