package discordtest_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/xconn/xconn/connectors/discord/discordtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	token   = "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gx1234.fake-bot-token-abcdefghijklmnopqrstu"
	chanID  = "1100000000000000001"
	dmID    = "1100000000000000002"
	guildID = "1000000000000000001"
)

var alice = discordtest.User{ID: "900000000000000001", Username: "alice"}

// rewrite sends discordgo's https://discord.com/api requests to the fake.
type rewrite struct{ to *url.URL }

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "discord.com" && strings.HasPrefix(r.URL.Path, "/api/") {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = rw.to.Scheme, rw.to.Host
		r.Host = rw.to.Host
	}
	return http.DefaultTransport.RoundTrip(r)
}

func newFake(t *testing.T, messageContent bool) *discordtest.Server {
	t.Helper()
	f := discordtest.New()
	f.SetHeartbeat(500 * time.Millisecond)
	f.AddBot(token, discordtest.Bot{ID: "800000000000000001", Username: "xconn-bot", MessageContent: messageContent})
	f.AddChannel(discordtest.Channel{ID: chanID, GuildID: guildID, Name: "general"})
	f.AddChannel(discordtest.Channel{ID: dmID, Type: discordtest.ChannelDM})
	f.Start()
	t.Cleanup(f.Close)
	return f
}

// session is a real discordgo session against the fake, reconnecting by
// hand (the test owns every Open).
func session(t *testing.T, f *discordtest.Server) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(f.APIURL())
	s.Client = &http.Client{Transport: rewrite{u}, Timeout: 5 * time.Second}
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = false
	s.SyncEvents = true
	s.LogLevel = -1
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	return s
}

// inbox collects MESSAGE_CREATE contents.
type inbox struct {
	mu   sync.Mutex
	msgs []*discordgo.Message
}

func (in *inbox) add(_ *discordgo.Session, m *discordgo.MessageCreate) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.msgs = append(in.msgs, m.Message)
}

func (in *inbox) wait(t *testing.T, n int) []*discordgo.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		in.mu.Lock()
		got := append([]*discordgo.Message(nil), in.msgs...)
		in.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("got fewer than %d messages", n)
	return nil
}

// TestGatewayAndREST drives the fake with discordgo: IDENTIFY and READY,
// MESSAGE_CREATE with content, a drop and a RESUME that replays what was
// written meanwhile, a RESUME refused (INVALID_SESSION) and answered with
// a new IDENTIFY, and the REST calls the connector makes.
func TestGatewayAndREST(t *testing.T) {
	f := newFake(t, true)
	s := session(t, f)
	var in inbox
	s.AddHandler(in.add)
	var readies sync.WaitGroup
	readies.Add(1)
	var once sync.Once
	s.AddHandler(func(*discordgo.Session, *discordgo.Ready) { once.Do(readies.Done) })
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readies.Wait()
	if s.State.User == nil || s.State.User.Username != "xconn-bot" {
		t.Fatalf("READY user %+v", s.State.User)
	}

	id1 := f.Say(chanID, alice, "hello bot")
	got := in.wait(t, 1)
	if got[0].ID != id1 || got[0].Content != "hello bot" || got[0].ChannelID != chanID || got[0].GuildID != guildID || got[0].Author.ID != alice.ID {
		t.Fatalf("MESSAGE_CREATE %+v", got[0])
	}

	// A dropped connection resumes, and what was said meanwhile is replayed.
	disconnected := make(chan struct{}, 4)
	s.AddHandler(func(*discordgo.Session, *discordgo.Disconnect) { disconnected <- struct{}{} })
	f.Drop(token, 4000)
	<-disconnected
	id2 := f.Say(chanID, alice, "while you were away")
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	got = in.wait(t, 2)
	if got[1].ID != id2 || f.Resumes(token) != 1 || f.Identifies(token) != 1 {
		t.Fatalf("after the resume: %+v, %d resumes, %d identifies", got[1], f.Resumes(token), f.Identifies(token))
	}

	// A session the Gateway forgot: INVALID_SESSION, then IDENTIFY.
	f.InvalidateSessions(token)
	f.Drop(token, 0)
	<-disconnected
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.Identifies(token) != 2 || f.Connected(token) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d identifies, %d connected after INVALID_SESSION", f.Identifies(token), f.Connected(token))
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Say(chanID, alice, "after a new identify")
	in.wait(t, 3)

	// REST.
	me, err := s.User("@me")
	if err != nil || me.ID != "800000000000000001" || !me.Bot {
		t.Fatalf("users/@me %+v %v", me, err)
	}
	ch, err := s.Channel(chanID)
	if err != nil || ch.GuildID != guildID || ch.Type != discordgo.ChannelTypeGuildText {
		t.Fatalf("channel %+v %v", ch, err)
	}
	sent, err := s.ChannelMessageSendComplex(chanID, &discordgo.MessageSend{Content: "a reply",
		Reference: &discordgo.MessageReference{MessageID: id1, ChannelID: chanID},
		Files:     []*discordgo.File{{Name: "a.txt", ContentType: "text/plain", Reader: bytes.NewReader([]byte("file bytes"))}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sent.Attachments) != 1 || sent.MessageReference == nil || sent.MessageReference.MessageID != id1 {
		t.Fatalf("sent %+v", sent)
	}
	if _, err := s.ChannelMessageEdit(chanID, sent.ID, "a reply, edited"); err != nil {
		t.Fatal(err)
	}
	out := f.Sent(chanID)
	if len(out) != 1 || out[0].Text != "a reply, edited" || out[0].Edits[0] != "a reply" || out[0].ReplyTo != id1 ||
		string(out[0].Files[0].Data) != "file bytes" {
		t.Fatalf("Sent %+v", out)
	}
	res, err := http.Get(sent.Attachments[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("attachment %d", res.StatusCode)
	}
	hist, err := s.ChannelMessages(chanID, 100, "", id1, "")
	if err != nil || len(hist) != 3 || hist[0].ID != sent.ID || hist[2].ID != id2 {
		t.Fatalf("history after %s: %d %v", id1, len(hist), err)
	}
	// The bot's own message was dispatched too.
	in.wait(t, 4)
}

// TestErrors: 4014 when MESSAGE_CONTENT is not enabled, 4004 for a bad
// token, 401 on REST, and 429 with retry_after as discordgo reads them.
func TestErrors(t *testing.T) {
	f := newFake(t, false)
	s := session(t, f)
	var ce *websocket.CloseError
	if err := s.Open(); !errors.As(err, &ce) || ce.Code != discordtest.CloseDisallowedIntents {
		t.Fatalf("Open without the intent: %v", err)
	}
	f.SetMessageContent(token, true)
	f.FailNext(token, discordtest.RouteSend, 429, 1500*time.Millisecond)
	_, err := s.ChannelMessageSend(chanID, "hi")
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("429: %v", err)
	}
	f.FailNext(token, discordtest.RouteSend, 502, 0)
	s.MaxRestRetries = 0
	if _, err := s.ChannelMessageSend(chanID, "hi"); err == nil {
		t.Fatal("502 accepted")
	}
	if _, err := s.ChannelMessageSend(chanID, strings.Repeat("é", discordtest.MaxTextLen)); err != nil {
		t.Fatalf("2000 characters refused: %v", err)
	}
	var re *discordgo.RESTError
	if _, err := s.ChannelMessageSend(chanID, strings.Repeat("é", discordtest.MaxTextLen+1)); !errors.As(err, &re) || re.Response.StatusCode != 400 {
		t.Fatalf("2001 characters: %v", err)
	}
	if _, err := s.Channel("1"); !errors.As(err, &re) || re.Message == nil || re.Message.Code != 10003 {
		t.Fatalf("unknown channel: %v", err)
	}
	f.Revoke(token)
	if _, err := s.User("@me"); !errors.As(err, &re) || re.Response.StatusCode != 401 {
		t.Fatalf("revoked: %v", err)
	}
	if err := s.Open(); !errors.As(err, &ce) || ce.Code != discordtest.CloseAuthenticationFailed {
		t.Fatalf("Open revoked: %v", err)
	}
}

// TestRateLimitBuckets: an emptied bucket answers 429 with the
// X-RateLimit-* headers, and discordgo's bucket waits its reset before
// the next call instead of being refused again.
func TestRateLimitBuckets(t *testing.T) {
	f := newFake(t, true)
	f.SetRateLimit(2, 600*time.Millisecond)
	s := session(t, f)
	start := time.Now()
	for i := range 4 {
		if _, err := s.ChannelMessageSend(chanID, "m"); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("4 sends in %v with 2 per 600ms", d)
	}
	if n := f.Calls(token, discordtest.RouteSend); n != 4 {
		t.Fatalf("%d calls: discordgo ran into a 429", n)
	}
}
