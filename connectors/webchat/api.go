package webchat

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// apiError is the JSON body of a failed API call.
type apiError struct {
	Error string `json:"error"`
}

// postResult is the JSON body of a 202 from POST <base>/api/messages.
type postResult struct {
	MessageID string `json:"message_id"`
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// channelOf resolves the channel a browser API call is for: the session's
// QR-bound channel, or the room given by ?room=.
func (c *Connector) channelOf(rw http.ResponseWriter, r *http.Request) (string, bool) {
	room, ok := roomOf(r)
	if !ok {
		writeJSON(rw, http.StatusBadRequest, apiError{"invalid room"})
		return "", false
	}
	s, ok := c.session(r)
	if !ok || s.channelFor(room) == "" {
		writeJSON(rw, http.StatusUnauthorized, apiError{"not signed in"})
		return "", false
	}
	return s.channelFor(room), true
}

// postMessage serves POST <base>/api/messages: JSON {"text": ...} or
// multipart with parts "text" and "file". It answers 202 with the inbound
// message_id once the message is durably queued for xAgent.
func (c *Connector) postMessage(rw http.ResponseWriter, r *http.Request) {
	if !c.sameOrigin(r) {
		writeJSON(rw, http.StatusForbidden, apiError{"cross-origin request refused"})
		return
	}
	channel, ok := c.channelOf(rw, r)
	if !ok {
		return
	}
	cookie := c.cookieValue(r)
	n := r.ContentLength
	if n < 0 { // unknown length: charge the largest message
		n = c.maxUpload
	}
	if !c.sessions.spend(cookie, n, time.Now()) {
		c.log.Warn("webchat: upload quota exhausted", "channel", channel, "client", clientAddr(r))
		writeJSON(rw, http.StatusTooManyRequests, apiError{"too much uploaded in a short time; wait a minute"})
		return
	}
	r.Body = http.MaxBytesReader(rw, r.Body, c.maxUpload+64<<10)
	text, file, cleanup, err := c.readMessage(r)
	defer cleanup()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(rw, http.StatusRequestEntityTooLarge, apiError{fmt.Sprintf("message larger than %d bytes", c.maxUpload)})
			return
		}
		writeJSON(rw, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	msg, err := c.postUserMessage(r.Context(), channel, text, file)
	if err != nil {
		if errors.Is(err, errChannelGone) {
			writeJSON(rw, http.StatusGone, apiError{errChannelGone.Error()})
			return
		}
		c.log.Warn("webchat: post message", "channel", channel, "error", err)
		writeJSON(rw, http.StatusServiceUnavailable, apiError{"the message could not be queued; try again"})
		return
	}
	if err := c.publishMessage(r.Context(), channel, msg); err != nil {
		c.log.Warn("webchat: show message", "channel", channel, "error", err)
	}
	writeJSON(rw, http.StatusAccepted, postResult{MessageID: msg.MessageID})
}

// readMessage decodes the body; cleanup releases multipart temp files.
func (c *Connector) readMessage(r *http.Request) (string, *upload, func(), error) {
	nop := func() {}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var text string
	var file *upload
	cleanup := nop
	switch ct {
	case "application/json":
		var in struct {
			Text string `json:"text"`
		}
		dec := json.NewDecoder(r.Body)
		if err := dec.Decode(&in); err != nil {
			return "", nil, nop, fmt.Errorf("invalid JSON body: %w", err)
		}
		text = in.Text
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return "", nil, nop, fmt.Errorf("invalid multipart body: %w", err)
		}
		cleanup = func() { _ = r.MultipartForm.RemoveAll() }
		text = r.PostFormValue("text")
		if fhs := r.MultipartForm.File["file"]; len(fhs) > 0 {
			if len(fhs) > 1 {
				return "", nil, cleanup, errors.New("one file per message")
			}
			fh := fhs[0]
			if fh.Size > c.maxUpload {
				return "", nil, cleanup, &http.MaxBytesError{Limit: c.maxUpload}
			}
			f, err := fh.Open()
			if err != nil {
				return "", nil, cleanup, fmt.Errorf("read file part: %w", err)
			}
			prev := cleanup
			cleanup = func() { _ = f.Close(); prev() }
			file = &upload{Filename: cleanFilename(fh.Filename), MimeType: fh.Header.Get("Content-Type"), Body: f}
		}
	default:
		return "", nil, nop, errors.New(`content type must be application/json or multipart/form-data`)
	}
	text = strings.TrimSpace(text)
	if len(text) > DefaultMaxTextBytes {
		return "", nil, cleanup, fmt.Errorf("text longer than %d bytes", DefaultMaxTextBytes)
	}
	if !utf8.ValidString(text) {
		return "", nil, cleanup, errors.New("text is not valid UTF-8")
	}
	if text == "" && file == nil {
		return "", nil, cleanup, errors.New("a message needs text or a file")
	}
	return text, file, cleanup, nil
}

// cleanFilename keeps the base name of a browser-supplied file name, with
// no path separators or control characters, at most 200 bytes.
func cleanFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "." || name == ".." {
		name = "file"
	}
	return name
}

// events serves GET <base>/api/events as Server-Sent Events: first a
// status event, then the channel's history (or recent messages), then live
// events, and a status event whenever the chat's state changes.
func (c *Connector) events(rw http.ResponseWriter, r *http.Request) {
	channel, ok := c.channelOf(rw, r)
	if !ok {
		return
	}
	room, _ := roomOf(r)
	// The history is read with the subscription, before the first event,
	// so that a client that waits for it sees everything it posts
	// afterwards live. Live events that arrive meanwhile wait in sub.ch; a
	// message in both is shown once (the page keys messages by id).
	sub, past, err := c.subscribeWithHistory(r.Context(), channel, clientAddr(r))
	if err != nil {
		writeJSON(rw, http.StatusServiceUnavailable, apiError{"too many open chats; try again later"})
		return
	}
	defer c.hub.unsubscribe(sub)

	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(rw)
	bw := bufio.NewWriter(rw)
	send := func(write func() error) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if err := write(); err != nil {
			return false
		}
		if err := bw.Flush(); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	last := c.chatState(r, room, channel)
	st, _ := newEvent(EventStatus, last)
	if !send(func() error { return writeSSE(bw, st) }) {
		return
	}
	for _, ev := range past {
		if !send(func() error { return writeSSE(bw, ev) }) {
			return
		}
	}
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	poll := time.NewTicker(statusPollEvery)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
			if now := c.chatState(r, room, channel); now != last {
				last = now
				ev, _ := newEvent(EventStatus, now)
				if !send(func() error { return writeSSE(bw, ev) }) {
					return
				}
			}
		case ev := <-sub.ch:
			if !send(func() error { return writeSSE(bw, ev) }) {
				return
			}
		case <-tick.C:
			if !send(func() error { _, err := bw.WriteString("event: " + EventPing + "\ndata: {}\n\n"); return err }) {
				return
			}
		case <-sub.gone:
			// Dropped (slow, signed out or shutting down): flush what was
			// queued, such as a final status event, then end the stream.
			for {
				select {
				case ev := <-sub.ch:
					if !send(func() error { return writeSSE(bw, ev) }) {
						return
					}
				default:
					return
				}
			}
		case <-r.Context().Done():
			return
		}
	}
}

// Notes of the chat states, as the page shows them.
const (
	detailAgentOffline = "agent offline — your messages will be answered when it is back"
	detailSignedOut    = "This chat was signed out. Sign in again with a new QR code (xconn demo --signin prints one) or the room's access code."
	detailReplaced     = "This chat was replaced by a newer sign-in. Reload the page to open it."
)

// chatState is the state of the chat the stream of r shows: channel, as
// the browser's session resolved it for room when the stream opened.
func (c *Connector) chatState(r *http.Request, room, channel string) StatusEvent {
	s, ok := c.session(r)
	switch cur := s.channelFor(room); {
	case !ok || cur == "":
		return StatusEvent{State: StateSignedOut, Detail: detailSignedOut}
	case cur != channel:
		return StatusEvent{State: StateReplaced, Detail: detailReplaced}
	}
	ch, err := c.srv.Channel(channel)
	if err != nil || !ch.Authenticated() {
		return StatusEvent{State: StateSignedOut, Detail: detailSignedOut}
	}
	if !ch.Served() {
		return StatusEvent{State: StateAgentOffline, Detail: detailAgentOffline}
	}
	return StatusEvent{State: StateConnected}
}

// writeSSE writes one event; data is single-line JSON.
func writeSSE(bw *bufio.Writer, ev event) error {
	_, err := fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", ev.typ, ev.data)
	return err
}

// file serves GET <base>/media/<ref>: a file of the browser's channel
// (uploads it sent and files of assistant messages).
func (c *Connector) file(rw http.ResponseWriter, r *http.Request) {
	channel, ok := c.channelOf(rw, r)
	if !ok {
		return
	}
	ch, err := c.srv.Channel(channel)
	var f *connector.File
	if err == nil {
		f, err = ch.OpenFile(r.Context(), r.PathValue("ref"))
	}
	var body io.ReadCloser
	if err == nil {
		body, err = f.Open()
	}
	if err != nil {
		if protocol.AsError(err) == nil { // not merely unknown, expired or foreign
			c.log.Warn("webchat: open file", "channel", channel, "error", err)
		}
		http.NotFound(rw, r)
		return
	}
	defer body.Close()
	mt := f.MimeType
	if mt == "" {
		mt = "application/octet-stream"
	}
	rw.Header().Set("Content-Type", mt)
	rw.Header().Set("Cache-Control", "private, max-age=300")
	disp := "attachment"
	if inlineSafe(mt) {
		disp = "inline"
	}
	rw.Header().Set("Content-Disposition", mime.FormatMediaType(disp, map[string]string{"filename": f.Filename}))
	if rs, ok := body.(io.ReadSeeker); ok {
		http.ServeContent(rw, r, "", time.Time{}, rs)
		return
	}
	if f.Size > 0 {
		rw.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
	}
	_, _ = io.Copy(rw, body)
}

// inlineSafe reports whether a file of media type mt may be shown inline:
// raster images, audio and video (never HTML or SVG, which could script).
func inlineSafe(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "video/")
}
