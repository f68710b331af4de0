package connector_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/connector/connectortest"
	"github.com/xconn/xconn/protocol"
	"github.com/xconn/xconn/store"
)

// fileIn declares an upload reference and an optional second one.
type fileIn struct {
	Doc     connector.Upload  `json:"doc" desc:"The document to send."`
	Caption string            `json:"caption,omitempty"`
	Extra   *connector.Upload `json:"extra,omitempty"`
}

func TestUploadArgumentIsResolvedToTheChannelsFile(t *testing.T) {
	st := connectortest.NewStore(t)
	srv, err := connector.New(connector.Options{Store: st, APIKey: typedKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.files", Name: "Files", Provider: "files", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	type acc = connector.Account[botBinding]
	_ = connector.AddForm(srv, "login", func(ctx context.Context, ch *connector.Channel, in botLogin) (acc, error) {
		return acc{Binding: botBinding{Token: in.Token, ChatID: in.ChatID}, DisplayName: "x"}, nil
	}, connector.FlowOptions{})
	if err := connector.AddTool(srv, "file_send", func(ctx context.Context, call *connector.Call, in fileIn) (map[string]string, error) {
		r, err := in.Doc.Open()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		return map[string]string{"name": in.Doc.Filename, "body": string(b), "extra": map[bool]string{true: "yes", false: "no"}[in.Extra != nil]}, err
	}, connector.ToolOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	eventually(t, "started", func() bool { return srv.Card() != nil })

	tool, _ := srv.Card().Tool("file_send")
	if got := protocol.UploadRefArguments(tool.InputSchema); len(got) != 2 {
		t.Fatalf("upload-ref arguments = %v in %s", got, tool.InputSchema)
	}
	c, id := connectBot(t, base)
	tctx := testCtx(t)
	if _, err := c.SignInForm(tctx, id, "login", map[string]string{"token": "tok-good-1", "chat_id": "1"}); err != nil {
		t.Fatal(err)
	}
	resp := postUpload(t, base, id, typedKey, "note.txt", []byte("hello file"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	var up protocol.UploadResponse
	if err := decodeJSON(resp.Body, &up); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out, err := connectortest.Invoke[map[string]string](tctx, c, id, "file_send", map[string]any{"doc": up.FileRef})
	if err != nil || out["body"] != "hello file" || out["name"] != "note.txt" || out["extra"] != "no" {
		t.Fatalf("invoke = %v, %v", out, err)
	}
	// A reference of another channel, or none at all, is invalid_arguments.
	ack, err := c.Open(tctx, "")
	if err != nil {
		t.Fatal(err)
	}
	other := ack.ConnectorChannelID
	if _, err := c.SignInForm(tctx, other, "login", map[string]string{"token": "tok-good-1", "chat_id": "2"}); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{up.FileRef, "file_unknown"} {
		_, err := connectortest.Invoke[map[string]string](tctx, c, other, "file_send", map[string]any{"doc": ref})
		if !isCode(err, protocol.CodeInvalidArguments) {
			t.Errorf("ref %s on another channel: %v, want invalid_arguments", ref, err)
		}
	}
}

func TestServeHandleRoutesAndStops(t *testing.T) {
	srv, err := connector.New(connector.Options{DataDir: t.TempDir(), APIKey: typedKey,
		Identity: connector.Identity{CardID: "im.h", Name: "H", Provider: "h", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Handle("GET /hello/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hi "+r.PathValue("name"))
	})); err != nil {
		t.Fatal(err)
	}
	bad, err := connector.New(connector.Options{DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.h", Name: "H", Provider: "h", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Handle("GET /health", http.NotFoundHandler()); err == nil {
		t.Error("a route over /health was accepted")
	}
	closed := make(chan struct{})
	srv.OnClose(func(context.Context) error { close(closed); return nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	eventually(t, "started", func() bool { return srv.Card() != nil })
	if got := httpGet(t, base+"/hello/ann"); got != "hi ann" {
		t.Errorf("route = %q", got)
	}
	if got := httpGet(t, base+"/connector-card.json"); !strings.Contains(got, `"im.h"`) {
		t.Errorf("card = %q", got)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	select {
	case <-closed:
	default:
		t.Error("OnClose hook did not run")
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("still serving after Serve returned")
	}
}

func TestChannelStateIsBounded(t *testing.T) {
	bt := newBotTarget()
	srv, base := startBot(t, connectortest.NewStore(t), bt)
	c, id := connectBot(t, base)
	ctx := testCtx(t)
	if _, err := c.SignInForm(ctx, id, "bot_login", map[string]string{"token": "tok-good-1", "chat_id": "3"}); err != nil {
		t.Fatal(err)
	}
	ch, _ := srv.Channel(id)
	big := strings.Repeat("x", store.MaxChannelStateValueBytes+1)
	if err := ch.SaveState(ctx, "big", big); !errors.Is(err, store.ErrChannelStateFull) {
		t.Fatalf("oversized value: %v", err)
	}
	if err := ch.SaveState(ctx, "ctx_token", "abc"); err != nil {
		t.Fatal(err)
	}
	var v string
	if ok, err := ch.LoadState(ctx, "ctx_token", &v); !ok || err != nil || v != "abc" {
		t.Fatalf("load = %q %v %v", v, ok, err)
	}
	if err := ch.DeleteState(ctx, "ctx_token"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ch.LoadState(ctx, "ctx_token", &v); ok {
		t.Error("deleted key still set")
	}
}

func TestConsumerMaxChannelsAndResignIn(t *testing.T) {
	srv, err := connector.New(connector.Options{Store: connectortest.NewStore(t), APIKey: typedKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.one", Name: "One", Provider: "one", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	type acc = connector.Account[botBinding]
	_ = connector.AddForm(srv, "login", func(ctx context.Context, ch *connector.Channel, in botLogin) (acc, error) {
		return acc{Binding: botBinding{Token: in.Token, ChatID: in.ChatID}, DisplayName: "x"}, nil
	}, connector.FlowOptions{})
	byToken, err := connector.AddConsumer(srv, connector.Consumer[string, botBinding]{
		Key: func(b botBinding) string { return b.Token }, MaxChannels: 1,
		Uses: func(b botBinding) bool { return b.ChatID != 99 }})
	if err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); _ = srv.Close(context.Background()) }()
	c, id1 := connectBot(t, hs.URL)
	ctx := testCtx(t)
	in := map[string]string{"token": "tok-1", "chat_id": "1"}
	if _, err := c.SignInForm(ctx, id1, "login", in); err != nil {
		t.Fatal(err)
	}
	// Signing the same channel in again with the same credential keeps it
	// a member.
	if _, err := c.SignInForm(ctx, id1, "login", map[string]string{"token": "tok-1", "chat_id": "2"}); err != nil {
		t.Fatal(err)
	}
	if got := byToken.Members("tok-1").Channels(); len(got) != 1 || got[0].Binding.ChatID != 2 {
		t.Fatalf("members after re-sign-in = %+v", got)
	}
	ack, err := c.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SignInForm(ctx, ack.ConnectorChannelID, "login", in)
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("second channel with an exclusive credential: %v", err)
	}
	if got := byToken.Members("tok-1").Channels(); len(got) != 1 || got[0].Channel.ID() != id1 {
		t.Fatalf("members = %+v", got)
	}
	// A binding the consumer does not use is not limited by it.
	if _, err := c.SignInForm(ctx, ack.ConnectorChannelID, "login", map[string]string{"token": "tok-1", "chat_id": "99"}); err != nil {
		t.Fatalf("binding outside the consumer: %v", err)
	}
	if got := byToken.Members("tok-1").Channels(); len(got) != 1 {
		t.Fatalf("members = %+v", got)
	}
}

// TestQRPollRefreshRequired: a target that expires its code before the
// SDK's TTL reports qr_refresh_required; auth.status refresh=true issues a
// new code, and the sign-in goes on with it.
func TestQRPollRefreshRequired(t *testing.T) {
	srv, err := connector.New(connector.Options{Store: connectortest.NewStore(t), APIKey: typedKey, DataDir: t.TempDir(),
		Identity: connector.Identity{CardID: "im.qr", Name: "QR", Provider: "qr", TargetType: protocol.TargetIM}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	issued := 0
	confirmed := map[string]bool{}
	if err := connector.AddQR(srv, "qr_login", connector.QROptions[botBinding]{
		// The count of codes is the session's own state (WithQRData),
		// shared by Issue and Poll.
		Issue: func(ctx context.Context, s *connector.QRSession) (string, error) {
			var n int
			connector.WithQRData(s, func(issued *int) { *issued++; n = *issued })
			mu.Lock()
			issued = n
			mu.Unlock()
			return "code-" + strconv.Itoa(n), nil
		},
		Poll: func(ctx context.Context, s *connector.QRSession) (connector.QRResult[botBinding], error) {
			var n int
			connector.WithQRData(s, func(issued *int) { n = *issued })
			mu.Lock()
			defer mu.Unlock()
			if n == 1 {
				return connector.QRResult[botBinding]{Status: protocol.AuthQRRefreshRequired, Message: "the target expired the code"}, nil
			}
			if confirmed["code-2"] {
				return connector.QRResult[botBinding]{Status: protocol.AuthAuthenticated,
					Account: &connector.Account[botBinding]{Binding: botBinding{Token: "t"}, DisplayName: "qr user"}}, nil
			}
			return connector.QRResult[botBinding]{Status: protocol.AuthPending}, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	srv.OnAssistantMessage(func(context.Context, *connector.Channel, *connector.AssistantMessage) error { return nil })
	if err := srv.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); _ = srv.Close(context.Background()) }()
	c, id := connectBot(t, hs.URL)
	var seen []string
	st, err := c.SignInQR(testCtx(t), id, "qr_login", func(ctx context.Context, text string) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, text)
		confirmed[text] = true
		return nil
	})
	if err != nil || st.Status != protocol.AuthAuthenticated {
		t.Fatalf("sign-in = %+v, %v", st, err)
	}
	if len(seen) != 2 || seen[1] != "code-2" || issued != 2 {
		t.Fatalf("codes confirmed = %q (%d issued), want code-1 then code-2", seen, issued)
	}
}

// TestDeliveryProgress: progress records survive by message id, a save
// completes with a cancelled context, clearing drops one, and only the
// latest MaxProgressRecords are kept.
func TestDeliveryProgress(t *testing.T) {
	bt := newBotTarget()
	srv, base := startBot(t, connectortest.NewStore(t), bt)
	c, id := connectBot(t, base)
	ctx := testCtx(t)
	if _, err := c.SignInForm(ctx, id, "bot_login", map[string]string{"token": "tok-good-1", "chat_id": "5"}); err != nil {
		t.Fatal(err)
	}
	ch, _ := srv.Channel(id)
	type step struct{ Done int }
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ch.SaveProgress(cancelled, "m1", step{Done: 2}); err != nil {
		t.Fatalf("save with a cancelled context: %v", err)
	}
	var got step
	if ok, err := ch.LoadProgress(ctx, "m1", &got); !ok || err != nil || got.Done != 2 {
		t.Fatalf("load = %+v %v %v", got, ok, err)
	}
	if err := ch.ClearProgress(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := ch.LoadProgress(ctx, "m1", &got); ok {
		t.Fatal("cleared progress still there")
	}
	for i := range connector.MaxProgressRecords + 3 {
		if err := ch.SaveProgress(ctx, fmt.Sprint("n", i), step{Done: i}); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := ch.LoadProgress(ctx, "n0", &got); ok {
		t.Error("the oldest record was kept beyond the bound")
	}
	last := fmt.Sprint("n", connector.MaxProgressRecords+2)
	if ok, _ := ch.LoadProgress(ctx, last, &got); !ok || got.Done != connector.MaxProgressRecords+2 {
		t.Errorf("latest record = %+v %v", got, ok)
	}
}
