package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// chatFake is the target of the kit's own tests: a chat service with one
// bot, whose token is chatToken, and one person. The person's messages
// queue as updates the bot long-polls (GET /updates?after=N), so they wait
// while the connector is down; the bot posts (POST /send) and edits (POST
// /edit) messages. It speaks JSON over HTTP and is safe for concurrent use.
type chatFake struct {
	hs *httptest.Server

	mu      sync.Mutex
	updates []update  // what the person wrote, oldest first (ids 1, 2, ...)
	posted  []message // what the bot posted, as it reads now
	changed chan struct{}
}

type update struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

type message struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// chatToken is the bot's token: a secret.
const chatToken = "kitchat-bot-token-5d1c9e0a7b3f"

// maxUpdates bounds the fake's queue and record.
const maxUpdates = 1000

func startChatFake() *chatFake {
	f := &chatFake{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /me", f.auth(func(w http.ResponseWriter, r *http.Request) {}))
	mux.HandleFunc("GET /updates", f.auth(f.serveUpdates))
	mux.HandleFunc("POST /send", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var m message
		if json.NewDecoder(r.Body).Decode(&m) != nil || m.Text == "" {
			http.Error(w, "want {\"text\": ...}", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		m.ID = len(f.posted) + 1
		if len(f.posted) < maxUpdates {
			f.posted = append(f.posted, m)
		}
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(m)
	}))
	mux.HandleFunc("POST /edit", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var m message
		if json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "want {\"id\": ..., \"text\": ...}", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if m.ID < 1 || m.ID > len(f.posted) {
			http.Error(w, "no such message", http.StatusNotFound)
			return
		}
		f.posted[m.ID-1].Text = m.Text
	}))
	f.hs = httptest.NewServer(mux)
	return f
}

func (f *chatFake) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+chatToken {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// serveUpdates answers the updates after ?after=N, waiting up to 200 ms
// for one.
func (f *chatFake) serveUpdates(w http.ResponseWriter, r *http.Request) {
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	timer := time.NewTimer(200 * time.Millisecond)
	defer timer.Stop()
	for {
		f.mu.Lock()
		var out []update
		if after < len(f.updates) {
			out = append(out, f.updates[max(after, 0):]...)
		}
		changed := f.changed
		f.mu.Unlock()
		if len(out) > 0 {
			_ = json.NewEncoder(w).Encode(out)
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			_, _ = w.Write([]byte("[]"))
			return
		case <-r.Context().Done():
			return
		}
	}
}

// say makes the person write text.
func (f *chatFake) say(_ context.Context, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.updates) < maxUpdates {
		f.updates = append(f.updates, update{ID: len(f.updates) + 1, Text: text})
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

// said returns the texts the bot posted, as they read now.
func (f *chatFake) said(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.posted))
	for i, m := range f.posted {
		out[i] = m.Text
	}
	return out, nil
}

func (f *chatFake) close() {
	f.hs.CloseClientConnections()
	f.hs.Close()
}
