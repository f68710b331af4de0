package connector

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
)

// watchWriter is the ResponseWriter serveWS gives wsconn.Accept: its Hijack
// puts a watchConn under the socket.
type watchWriter struct {
	http.ResponseWriter
	watch writeWatch
}

// Hijack hijacks the underlying connection (following Unwrap like
// http.ResponseController) and wraps it.
func (w *watchWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// A negotiated permessage-deflate would hide the frames' bytes.
	w.watch.compressed = w.Header().Get("Sec-WebSocket-Extensions") != ""
	w.watch.hijacked = true
	return &watchConn{Conn: nc, w: &w.watch}, brw, nil
}

// Unwrap returns the wrapped ResponseWriter (for http.ResponseController).
func (w *watchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// canHijack reports whether w, or a ResponseWriter it unwraps to, can be
// hijacked (otherwise wsconn.Accept gets w as it is and refuses it).
func canHijack(w http.ResponseWriter) bool {
	for {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
}

// watchConn is the socket under wsconn: it reports written frames to w.
type watchConn struct {
	net.Conn
	w *writeWatch
}

func (c *watchConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.w.active.Load() > 0 {
		c.w.wrote(p[:n])
	}
	return n, err
}

// writeWatch finds watched frames in the bytes written to a socket.
type writeWatch struct {
	hijacked, compressed bool // set by Hijack, before any write

	active  atomic.Int32 // frames watched
	mu      sync.Mutex
	written int64  // bytes written while a frame is watched
	tail    []byte // the last maxMarker-1 bytes written, for a marker split between writes
	join    []byte // scratch: tail and the start of the next write
	frames  []*frameWatch
}

// maxMarker bounds a frame's ,"packet_id":"..." member (a packet_id of
// this socket is about 30 bytes).
const maxMarker = 64

// frameWatch is one watched frame.
type frameWatch struct {
	marker []byte        // ,"packet_id":"..." as in the frame
	rest   int64         // bytes of the frame after the marker
	end    int64         // offset in written where the frame ends; -1 until seen
	done   chan struct{} // closed once the frame is written
	closed bool
}

// usable reports whether the frames of the socket can be watched.
func (w *writeWatch) usable() bool { return w.hijacked && !w.compressed }

// add watches frame, which carries packetID and is not queued yet. It
// returns nil when the frame does not carry the member (never for an
// envelope encoded by protocol).
func (w *writeWatch) add(packetID string, frame []byte) *frameWatch {
	marker := append(append([]byte(`,"packet_id":"`), packetID...), '"')
	i := bytes.Index(frame, marker)
	if i < 0 || len(marker) > maxMarker {
		return nil
	}
	fw := &frameWatch{marker: marker, rest: int64(len(frame) - i - len(marker)), end: -1, done: make(chan struct{})}
	w.mu.Lock()
	if w.active.Add(1) == 1 {
		w.tail = w.tail[:0] // the bytes before this point cannot hold the frame
	}
	w.frames = append(w.frames, fw)
	w.mu.Unlock()
	return fw
}

// remove stops watching fw (written or given up).
func (w *writeWatch) remove(fw *frameWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range w.frames {
		if f == fw {
			w.frames = slices.Delete(w.frames, i, i+1)
			w.active.Add(-1)
			return
		}
	}
}

// wrote records p, just written to the socket: it finds the markers of
// watched frames (also one split between the previous write and p) and
// reports every frame whose last byte is now written.
func (w *writeWatch) wrote(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.join = w.join[:0]
	for _, fw := range w.frames {
		if fw.end >= 0 {
			continue
		}
		at := int64(-1)
		if len(w.tail) > 0 {
			if len(w.join) == 0 {
				w.join = append(append(w.join, w.tail...), p[:min(len(p), maxMarker-1)]...)
			}
			if i := bytes.Index(w.join, fw.marker); i >= 0 {
				at = w.written - int64(len(w.tail)) + int64(i)
			}
		}
		if at < 0 {
			if i := bytes.Index(p, fw.marker); i >= 0 {
				at = w.written + int64(i)
			}
		}
		if at >= 0 {
			fw.end = at + int64(len(fw.marker)) + fw.rest
		}
	}
	w.written += int64(len(p))
	for _, fw := range w.frames {
		if !fw.closed && fw.end >= 0 && w.written >= fw.end {
			fw.closed = true
			close(fw.done)
		}
	}
	const keep = maxMarker - 1
	if len(p) >= keep {
		w.tail = append(w.tail[:0], p[len(p)-keep:]...)
		return
	}
	w.tail = append(w.tail, p...)
	if drop := len(w.tail) - keep; drop > 0 {
		w.tail = w.tail[:copy(w.tail, w.tail[drop:])]
	}
}
