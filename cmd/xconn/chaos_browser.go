package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xconn/xconn/cmd/xconn/internal/chaos"
)

// chaosBrowser is one browser of a chaos run on one web chat room: it
// enters the room with the access code, posts messages (some with a file)
// through POST /webchat/api/messages as the chat page does, and reads the
// room's event stream, reporting what it sees to the checker. Every
// response body it reads is scanned for canaries.
type chaosBrowser struct {
	web  string // the web side's origin, e.g. http://127.0.0.1:1234
	room string
	code string
	run  string // run nonce, part of every text
	hc   *http.Client
	scan *chaos.Scanner
	chk  *chaos.Checker

	slowUntil atomic.Int64 // unix nanos: read the event stream slowly until then
	posted    atomic.Int64
	checked   map[string]bool // reply ids whose file was fetched (events goroutine only)
	trace     io.Writer       // one line per stream (re)connect and assistant message, for a kept run
}

func newChaosBrowser(web, room, code, run string, scan *chaos.Scanner, chk *chaos.Checker, trace io.Writer) *chaosBrowser {
	jar, _ := cookiejar.New(nil)
	return &chaosBrowser{web: web, room: room, code: code, run: run, scan: scan, chk: chk,
		hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}, checked: map[string]bool{}, trace: trace}
}

// read returns a response body (at most 1 MiB), scanned for canaries.
func (b *chaosBrowser) read(what string, resp *http.Response) []byte {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	b.scan.Scan("browser "+b.room+" "+what, body)
	for k, vs := range resp.Header {
		b.scan.Scan("browser "+b.room+" "+what+" header "+k, []byte(strings.Join(vs, ",")))
	}
	return body
}

// enter posts the access code; the session cookie lands in the jar.
func (b *chaosBrowser) enter(ctx context.Context) error {
	form := url.Values{"access_code": {b.code}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.web+"/webchat/rooms/"+b.room, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.web)
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	b.read("enter", resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("enter room %s: status %d", b.room, resp.StatusCode)
	}
	return nil
}

// text is the unique text of message seq of this browser.
func (b *chaosBrowser) text(seq int) string {
	return fmt.Sprintf("m %s %s %d", b.run, b.room, seq)
}

// errNotQueued: the connector answered that the message was not queued.
var errNotQueued = errors.New("not queued")

// post sends message seq (with a file when withFile). It returns the
// message_id on 202, errNotQueued when the answer says it was not queued,
// or another error when no answer came (it may or may not be queued).
func (b *chaosBrowser) post(ctx context.Context, seq int, withFile bool) (string, error) {
	text := b.text(seq)
	var body bytes.Buffer
	ctype := "application/json"
	if withFile {
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("text", text)
		fw, _ := mw.CreateFormFile("file", fmt.Sprintf("f-%d.txt", seq))
		fmt.Fprintf(fw, "file of %s\n", text)
		_ = mw.Close()
		ctype = mw.FormDataContentType()
	} else {
		j, _ := json.Marshal(map[string]string{"text": text})
		body.Write(j)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.web+"/webchat/api/messages?room="+b.room, &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Origin", b.web)
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", err
	}
	out := b.read("post", resp)
	switch resp.StatusCode {
	case http.StatusAccepted:
		var r struct {
			MessageID string `json:"message_id"`
		}
		if err := json.Unmarshal(out, &r); err != nil || r.MessageID == "" {
			return "", fmt.Errorf("202 without a message_id: %q", out)
		}
		return r.MessageID, nil
	case http.StatusUnauthorized:
		return "", fmt.Errorf("%w: signed out", errNotQueued)
	}
	return "", fmt.Errorf("%w: status %d", errNotQueued, resp.StatusCode)
}

// send posts messages every gap until ctx ends or paused() holds; each
// post is recorded before it is made (a reply may come before the 202).
func (b *chaosBrowser) send(ctx context.Context, gap time.Duration, paused func() bool, fileEvery int) {
	seq := 0
	for ctx.Err() == nil {
		if paused() {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		seq++
		withFile := fileEvery > 0 && seq%fileEvery == 0
		text := b.text(seq)
		b.chk.Maybe(b.room, seq, text, withFile)
		for {
			pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			id, err := b.post(pctx, seq, withFile)
			cancel()
			if err == nil {
				b.chk.Sent(b.room, seq, text, id, withFile)
				b.posted.Add(1)
				break
			}
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, errNotQueued) {
				break // no answer: maybe queued; the next message gets a new seq
			}
			// Not queued: sign in again if needed, then retry the same text.
			sleepCtx(ctx, 300*time.Millisecond)
			_ = b.enter(ctx)
		}
		sleepCtx(ctx, gap)
	}
}

// sseEvent is one Server-Sent Event of the web chat's stream.
type sseEvent struct {
	typ  string
	data []byte
}

// events reads the room's event stream until ctx ends, reconnecting (and
// entering the room again) whenever it breaks.
func (b *chaosBrowser) events(ctx context.Context) {
	for ctx.Err() == nil {
		err := b.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNotQueued) {
			_ = b.enter(ctx)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// stream reads one connection of the event stream.
func (b *chaosBrowser) stream(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.web+"/webchat/api/events?room="+b.room, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Jar: b.hc.Jar} // no overall timeout: a stream lives long
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		b.read("events", resp)
		return errNotQueued
	}
	if resp.StatusCode != http.StatusOK {
		b.read("events", resp)
		return fmt.Errorf("events: status %d", resp.StatusCode)
	}
	b.tracef("stream open")
	defer b.tracef("stream closed")
	sc := bufio.NewScanner(io.TeeReader(resp.Body, b.scan.Stream("browser "+b.room+" events")))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		if time.Now().UnixNano() < b.slowUntil.Load() {
			time.Sleep(100 * time.Millisecond) // a slow consumer
		}
		line := sc.Text()
		switch {
		case line == "":
			if ev.typ != "" {
				b.observe(ctx, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = append(ev.data, strings.TrimPrefix(line, "data: ")...)
		}
	}
	return sc.Err()
}

// observe reports assistant messages: echo replies and tool messages.
func (b *chaosBrowser) observe(ctx context.Context, ev sseEvent) {
	if ev.typ != "message" {
		return
	}
	var m struct {
		MessageID string `json:"message_id"`
		From      string `json:"from"`
		Text      string `json:"text"`
		Files     []struct {
			URL string `json:"url"`
		} `json:"files"`
	}
	if json.Unmarshal(ev.data, &m) != nil || m.From != "assistant" {
		return
	}
	b.tracef("message %s %q", m.MessageID, m.Text)
	switch {
	case strings.HasPrefix(m.Text, "You said: "):
		replyTo := strings.TrimPrefix(m.Text, "You said: ")
		b.chk.Final(replyTo, m.MessageID, len(m.Files) > 0)
		if len(m.Files) > 0 && !b.checked[m.MessageID] {
			b.checked[m.MessageID] = true
			b.checkFile(ctx, m.MessageID, m.Files[0].URL, "file of "+replyTo+"\n")
		}
	case strings.HasPrefix(m.Text, "tool "):
		b.chk.ToolEffect(strings.TrimPrefix(m.Text, "tool "), m.MessageID)
	}
}

// checkFile fetches the file of a reply as the page would and compares it
// with the file the browser sent; it retries for a minute (the connector
// may be restarting).
func (b *chaosBrowser) checkFile(ctx context.Context, replyID, ref, want string) {
	if ref == "" {
		b.chk.Problem("reply %s: its file has no URL", replyID)
		return
	}
	u := b.web + ref
	if strings.Contains(ref, "?") {
		u += "&room=" + b.room
	} else {
		u += "?room=" + b.room
	}
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return
		}
		resp, err := b.hc.Do(req)
		if err == nil {
			body := b.read("media", resp)
			switch {
			case resp.StatusCode == http.StatusOK && string(body) == want:
				return
			case resp.StatusCode == http.StatusOK:
				b.chk.Problem("reply %s: its file holds %q, want %q", replyID, body, want)
				return
			case resp.StatusCode == http.StatusUnauthorized:
				_ = b.enter(ctx)
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
	b.chk.Problem("reply %s: its file could not be fetched (%s)", replyID, last)
}

// tracef writes one line of the browser's trace.
func (b *chaosBrowser) tracef(format string, args ...any) {
	fmt.Fprintf(b.trace, "%s %s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05.000"), b.room}, args...)...)
}
