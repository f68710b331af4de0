package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// TestInvokeResolutionFollowsChannelChanges checks that channel resolution
// (served from the in-memory index) follows every write: a pushed
// Descriptor, logout, a connector_channel_id reissued on reopen, a session
// binding and a deleted channel.
func TestInvokeResolutionFollowsChannelChanges(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	first := th.signinRoom(t, "kim", "im.fake")
	second := th.signinRoom(t, "kim", "im.fake")
	args := json.RawMessage(`{"text":"hi"}`)
	routedTo := func() (string, protocol.Code) {
		res, err := th.Invoke(ctx, "kim", "", "im_fake_send", args, "c")
		if err != nil {
			return "", code(err)
		}
		return res.ChannelID, ""
	}
	if ch, c := routedTo(); ch != first.ChannelID {
		t.Fatalf("routed to %q (%s), want the first channel %s", ch, c, first.ChannelID)
	}

	// A pushed Descriptor marks the tool unavailable on the first channel.
	push := func(channelID string, sendStatus string) {
		f.mu.Lock()
		d := f.descriptor(f.channels[channelID])
		f.mu.Unlock()
		for i := range d.Tools {
			if d.Tools[i].ToolID == "im_fake_send" {
				d.Tools[i].Status = sendStatus
			}
		}
		env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: "fpush_" + sendStatus + time.Now().Format("150405.000000"),
			ConnectorChannelID: channelID, Type: protocol.TypeDescriptorPush}
		if err := env.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: d}); err != nil {
			t.Fatal(err)
		}
		f.sendOn(channelID, env)
	}
	push(first.ChannelID, protocol.ToolUnavailable)
	eventually(t, "the call routed to the second channel", func() bool {
		ch, _ := routedTo()
		return ch == second.ChannelID
	})

	// Logout of the second: no channel can run the tool.
	if err := th.Logout(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if ch, c := routedTo(); c != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("after logout: routed to %q (%s), want %s", ch, c, protocol.CodeConnectorChannelUnavailable)
	}

	// The tool comes back on the first channel.
	push(first.ChannelID, protocol.ToolAvailable)
	eventually(t, "the call routed to the first channel again", func() bool {
		ch, _ := routedTo()
		return ch == first.ChannelID
	})

	// The connector restarts and answers the reopen with a new id.
	const reissued = "cch_reissued"
	f.set(func(f *fakeConnector) {
		ch := f.channels[first.ChannelID]
		ch.id = reissued
		f.channels[reissued] = ch
	})
	f.dropAll()
	eventually(t, "the call routed to the reissued id", func() bool {
		ch, _ := routedTo()
		return ch == reissued
	})
	if got, err := th.db.GetUserChannel(ctx, first.ID); err != nil || got.ChannelID != reissued {
		t.Fatalf("stored record: %+v %v", got, err)
	}

	// A bound session, then the channel deleted: the binding goes with it.
	if err := th.BindSession(ctx, first.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if res, err := th.Invoke(ctx, "kim", "s1", "im_fake_send", args, "c"); err != nil || res.ChannelID != reissued {
		t.Fatalf("bound call: %+v %v", res, err)
	}
	if err := th.DeleteChannel(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Invoke(ctx, "kim", "s1", "im_fake_send", args, "c"); code(err) != protocol.CodeConnectorChannelUnavailable {
		t.Fatalf("after delete: %v, want %s (only the logged-out channel is left)", err, protocol.CodeConnectorChannelUnavailable)
	}
	ucs, err := th.Channels(ctx, "kim", "im.fake")
	if err != nil || len(ucs) != 1 || ucs[0].ID != second.ID || ucs[0].Authenticated {
		t.Fatalf("channels after delete: %+v %v", ucs, err)
	}
}

// pushDescriptor sends a connection.descriptor.push on channelID built by
// the fake from its channel state, changed by mod. It reports false when
// the channel is not open at the fake (any more). Safe to call from any
// goroutine.
func pushDescriptor(f *fakeConnector, channelID string, mod func(d *protocol.Descriptor)) bool {
	f.mu.Lock()
	ch := f.channels[channelID]
	if ch == nil || ch.conn == nil {
		f.mu.Unlock()
		return false
	}
	d := f.descriptor(ch)
	conn := ch.conn
	f.mu.Unlock()
	if mod != nil {
		mod(d)
	}
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: newID("fpush_"),
		ConnectorChannelID: channelID, Type: protocol.TypeDescriptorPush}
	if err := env.SetPayload(protocol.DescriptorPayload{ConnectionDescriptor: d}); err != nil {
		return false
	}
	return conn.Send(context.Background(), env) == nil
}

// mustPush is pushDescriptor on the test goroutine, failing the test when
// the push cannot be sent.
func mustPush(t *testing.T, f *fakeConnector, channelID string, mod func(d *protocol.Descriptor)) {
	t.Helper()
	if !pushDescriptor(f, channelID, mod) {
		t.Fatalf("push on %s: channel not open at the fake", channelID)
	}
}

// sameRecords reports whether the host's view of a user's channels (served
// from its cache) equals the store's.
func sameRecords(t *testing.T, th *testHost, userID, cardID string) error {
	t.Helper()
	ctx := ctxT(t)
	got, err := th.Channels(ctx, userID, cardID)
	if err != nil {
		return err
	}
	want, err := th.db.ListUserChannels(ctx, userID, cardID)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("host lists %d channels, store %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.ChannelID != w.ChannelID || g.SessionID != w.SessionID || g.Authenticated != w.Authenticated ||
			string(g.Descriptor) != string(w.Descriptor) {
			return fmt.Errorf("channel %d (%s): host auth %v session %q descriptor %s; store auth %v session %q descriptor %s",
				i, w.ID, g.Authenticated, g.SessionID, g.Descriptor, w.Authenticated, w.SessionID, w.Descriptor)
		}
	}
	return nil
}

// TestLogoutRacesDescriptorPushAndInvoke races a logout of one channel
// against Descriptor pushes on it (sent by the connector before it saw the
// logout) and against tool calls: the logout is never lost, the cache ends
// equal to the store, and resolution follows it.
func TestLogoutRacesDescriptorPushAndInvoke(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	a := th.signinRoom(t, "rho", "im.fake")
	b := th.signinRoom(t, "rho", "im.fake")
	args := json.RawMessage(`{"text":"hi"}`)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(2)
	go func() { // tool calls all along; they may land on either channel
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := th.Invoke(ctx, "rho", "", "im_fake_send", args, "c")
			if err == nil && res.ChannelID != a.ChannelID && res.ChannelID != b.ChannelID {
				errs <- fmt.Errorf("routed to unknown channel %s", res.ChannelID)
				return
			}
		}
	}()
	go func() { // authenticated Descriptors of b, toggling its tool
		defer wg.Done()
		for i := range 30 {
			// Once the logout closed the channel at the fake, pushes stop.
			pushDescriptor(f, b.ChannelID, func(d *protocol.Descriptor) {
				d.Connection.Status = protocol.StatusConnected
				for j := range d.Tools {
					if d.Tools[j].ToolID == "im_fake_send" && i%2 == 1 {
						d.Tools[j].Status = protocol.ToolUnavailable
					} else if d.Tools[j].ToolID == "im_fake_send" {
						d.Tools[j].Status = protocol.ToolAvailable
					}
				}
			})
		}
	}()
	if err := th.Logout(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A marker push on a: the host handles pushes in order, so once it is
	// applied every push on b before it was handled too.
	mustPush(t, f, a.ChannelID, func(d *protocol.Descriptor) { d.Connection.Status = protocol.StatusDegraded })
	eventually(t, "the marker push applied", func() bool {
		got, _ := th.db.GetUserChannel(ctx, a.ID)
		d, err := protocol.ParseDescriptor(got.Descriptor)
		return err == nil && d.Connection.Status == protocol.StatusDegraded
	})
	got, err := th.db.GetUserChannel(ctx, b.ID)
	if err != nil || got.Authenticated {
		t.Fatalf("logged-out channel after the race: authenticated %v, err %v (logout lost)", got.Authenticated, err)
	}
	if err := sameRecords(t, th, "rho", "im.fake"); err != nil {
		t.Fatalf("cache differs from the store: %v", err)
	}
	for range 3 {
		res, err := th.Invoke(ctx, "rho", "", "im_fake_send", args, "c")
		if err != nil || res.ChannelID != a.ChannelID {
			t.Fatalf("after logout: %+v %v, want channel %s", res, err, a.ChannelID)
		}
	}
}

// TestBindSessionRacesDescriptorPush races session bindings against pushed
// Descriptors of the same channels: neither write loses the other's field.
func TestBindSessionRacesDescriptorPush(t *testing.T) {
	t.Parallel()
	f := newFakeConnector(t, "im.fake", "")
	th := newTestHost(t, "", nil)
	th.admitOnline(t, f)
	ctx := ctxT(t)
	a := th.signinRoom(t, "sam", "im.fake")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			pushDescriptor(f, a.ChannelID, func(d *protocol.Descriptor) { d.Connection.Status = protocol.StatusDegraded })
		}
	}()
	for i := range 20 {
		if err := th.BindSession(ctx, a.ID, fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	mustPush(t, f, a.ChannelID, func(d *protocol.Descriptor) { d.Target.DisplayName = "marker" })
	eventually(t, "the marker push applied", func() bool {
		got, _ := th.db.GetUserChannel(ctx, a.ID)
		d, err := protocol.ParseDescriptor(got.Descriptor)
		return err == nil && d.Target.DisplayName == "marker"
	})
	got, err := th.db.GetUserChannel(ctx, a.ID)
	if err != nil || got.SessionID != "s19" {
		t.Fatalf("binding after the race: session %q, err %v, want s19", got.SessionID, err)
	}
	if err := sameRecords(t, th, "sam", "im.fake"); err != nil {
		t.Fatalf("cache differs from the store: %v", err)
	}
	if res, err := th.Invoke(ctx, "sam", "s19", "im_fake_send", json.RawMessage(`{}`), "c"); err != nil || res.UserChannelID != a.ID {
		t.Fatalf("bound call: %+v %v", res, err)
	}
}

// gatedStore holds one ListUserChannels after it read the store, until
// released, so that a test can write while a cache load is in flight.
type gatedStore struct {
	*store.DB
	mu   sync.Mutex
	read chan struct{} // closed once the armed read is done
	gate chan struct{} // the armed read returns once this is closed
}

func (g *gatedStore) arm() (read, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.read, g.gate = make(chan struct{}), make(chan struct{})
	return g.read, g.gate
}

func (g *gatedStore) ListUserChannels(ctx context.Context, userID, cardID string) ([]store.UserChannel, error) {
	ucs, err := g.DB.ListUserChannels(ctx, userID, cardID)
	g.mu.Lock()
	read, gate := g.read, g.gate
	g.read, g.gate = nil, nil
	g.mu.Unlock()
	if read != nil {
		close(read)
		<-gate
	}
	return ucs, err
}

// TestChannelCacheStaleLoadNotInstalled checks the generation rule: a load
// that read the store before a write and finishes after the write's
// invalidation (or an eviction) installs nothing, so the next read sees
// the write.
func TestChannelCacheStaleLoadNotInstalled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		clear func(c *channelCache)
	}{
		{"invalidate", func(c *channelCache) { c.invalidate("u1") }},
		{"invalidate all", func(c *channelCache) { c.invalidateAll() }},
		{"evicted and reloaded", func(c *channelCache) {
			c.invalidateAll()
			if _, err := c.channels(context.Background(), "u1", "im.fake"); err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openStore(t, t.TempDir())
			t.Cleanup(func() { _ = db.Close() })
			ctx := ctxT(t)
			uc := store.UserChannel{ID: "a", UserID: "u1", CardID: "im.fake", ChannelID: "ch_a"}
			if err := db.PutUserChannel(ctx, uc); err != nil {
				t.Fatal(err)
			}
			g := &gatedStore{DB: db}
			c := newChannelCache(g, 100)
			read, release := g.arm()
			done := make(chan *cardChannels, 1)
			go func() {
				cc, err := c.channels(ctx, "u1", "im.fake")
				if err != nil {
					t.Error(err)
				}
				done <- cc
			}()
			<-read // the load holds the old record
			uc.SessionID = "s1"
			if err := db.PutUserChannel(ctx, uc); err != nil {
				t.Fatal(err)
			}
			tc.clear(c)
			close(release)
			if stale := <-done; stale == nil || stale.list[0].uc.SessionID != "" {
				t.Fatalf("the raced load should have returned the old record")
			}
			cc, err := c.channels(ctx, "u1", "im.fake")
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.list[0].uc.SessionID; got != "s1" {
				t.Fatalf("after the write: session %q, want s1 (a stale load was installed)", got)
			}
		})
	}
}

// TestChannelCacheBound checks that the cache holds at most its limit,
// evicts least recently used users, keeps store order and does not keep a
// user larger than the limit.
func TestChannelCacheBound(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = db.Close() })
	ctx := ctxT(t)
	base := time.Unix(1_800_000_000, 0)
	put := func(id, user string, at time.Time) {
		t.Helper()
		if err := db.PutUserChannel(ctx, store.UserChannel{ID: id, UserID: user, CardID: "im.fake", ChannelID: "ch_" + id, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for u := range 6 {
		user := fmt.Sprintf("u%d", u)
		put(user+"b", user, base)
		put(user+"a", user, base) // same CreatedAt: ordered by id
		put(user+"0", user, base.Add(-time.Second))
	}
	for i := range 10 {
		put(fmt.Sprintf("big%02d", i), "big", base)
	}
	const limit = 9 // three users of 3 channels, with their slots: 12 > 9, so at most two
	c := newChannelCache(db, limit)
	for round := range 2 {
		for u := range 6 {
			user := fmt.Sprintf("u%d", u)
			cc, err := c.channels(ctx, user, "im.fake")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range cc.list {
				ids = append(ids, e.uc.ID)
			}
			if want := []string{user + "0", user + "a", user + "b"}; !slices.Equal(ids, want) {
				t.Fatalf("round %d: %s = %v, want %v", round, user, ids, want)
			}
			users, chans := c.len()
			if users+chans > limit {
				t.Fatalf("cache holds %d users and %d channels, limit %d", users, chans, limit)
			}
		}
	}
	cc, err := c.channels(ctx, "big", "im.fake")
	if err != nil || len(cc.list) != 10 {
		t.Fatalf("big user: %v %v", cc, err)
	}
	if users, chans := c.len(); users+chans > limit {
		t.Fatalf("a user larger than the limit was kept: %d users, %d channels", users, chans)
	}
	if cc, err := c.channels(ctx, "nobody", "im.fake"); err != nil || len(cc.list) != 0 {
		t.Fatalf("unknown user: %v %v", cc, err)
	}
}

// TestChannelCacheWriteInProgress checks that while a write of a user's
// channels runs, reads go to the store (a reader that sees the write
// committed in the store sees it through the host too) and nothing read
// meanwhile is cached past the write.
func TestChannelCacheWriteInProgress(t *testing.T) {
	t.Parallel()
	db := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = db.Close() })
	ctx := ctxT(t)
	uc := store.UserChannel{ID: "a", UserID: "u1", CardID: "im.fake", ChannelID: "ch_a"}
	if err := db.PutUserChannel(ctx, uc); err != nil {
		t.Fatal(err)
	}
	c := newChannelCache(db, 100)
	session := func() string {
		t.Helper()
		cc, err := c.channels(ctx, "u1", "im.fake")
		if err != nil {
			t.Fatal(err)
		}
		return cc.list[0].uc.SessionID
	}
	if got := session(); got != "" {
		t.Fatalf("session %q before the write", got)
	}
	end := c.beginWrite("u1")
	uc.SessionID = "s1"
	if err := db.PutUserChannel(ctx, uc); err != nil {
		t.Fatal(err)
	}
	if got := session(); got != "s1" { // committed, the write not ended yet
		t.Fatalf("session %q while the write ends, want s1", got)
	}
	if _, chans := c.len(); chans != 0 {
		t.Fatalf("%d channels cached during a write", chans)
	}
	end()
	if got := session(); got != "s1" {
		t.Fatalf("session %q after the write, want s1", got)
	}
	if _, chans := c.len(); chans != 1 {
		t.Fatalf("%d channels cached after the write, want 1", chans)
	}
}

func TestNewIDFormat(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		id := newID("pkt_")
		if len(id) != len("pkt_")+26 || id[:4] != "pkt_" {
			t.Fatalf("id %q: want pkt_ and 26 characters", id)
		}
		for _, c := range id[4:] {
			if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
				t.Fatalf("id %q: character %q outside lower-case base32", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}

// TestDropRouteCancelsReopenInFlight: a channel dropped (closed, logged
// out) while a reopen of it is on the wire must not get its route back
// from that reopen's ack; a reopen that starts after the drop is not
// affected by it.
func TestDropRouteCancelsReopenInFlight(t *testing.T) {
	s := &session{routes: map[string]*route{}}
	tok1, end1 := s.beginOpen("cch_1")
	tok2, end2 := s.beginOpen("cch_1") // two reopens together share the token
	other, endOther := s.beginOpen("cch_2")
	s.dropRoute("cch_1")
	if !tok1.dropped || !tok2.dropped || other.dropped {
		t.Fatalf("dropped flags: %v %v %v, want true true false", tok1.dropped, tok2.dropped, other.dropped)
	}
	tok3, end3 := s.beginOpen("cch_1")
	if tok3.dropped {
		t.Fatal("a reopen started after the drop sees it")
	}
	end1()
	end2()
	end3()
	endOther()
	if len(s.opening) != 0 {
		t.Fatalf("opening not cleaned up: %v", s.opening)
	}
	if tok, end := s.beginOpen(""); tok.dropped || len(s.opening) != 0 {
		t.Fatal("a new channel registers nothing")
	} else {
		end()
	}
}
