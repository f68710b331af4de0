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
	if ev, err := newEvent(EventMessage, msg); err == nil {
		c.hub.publish(channel, ev)
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
// status event, then the channel's recent messages, then live events.
func (c *Connector) events(rw http.ResponseWriter, r *http.Request) {
	channel, ok := c.channelOf(rw, r)
	if !ok {
		return
	}
	sub, err := c.hub.subscribe(channel)
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
	state := protocol.StatusRevoked
	if ch, err := c.srv.Channel(channel); err == nil {
		state = ch.Status()
	}
	st, _ := newEvent(EventStatus, StatusEvent{State: state})
	if !send(func() error { return writeSSE(bw, st) }) {
		return
	}
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case ev := <-sub.ch:
			if !send(func() error { return writeSSE(bw, ev) }) {
				return
			}
		case <-tick.C:
			if !send(func() error { _, err := bw.WriteString(": keep-alive\n\n"); return err }) {
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
