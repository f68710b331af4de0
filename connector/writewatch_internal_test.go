package connector

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/xconn/xconn/protocol"
)

func watchFrame(t *testing.T, id, text string) []byte {
	t.Helper()
	env := &protocol.Envelope{Schema: protocol.PacketSchema, PacketID: id, ConnectorChannelID: "cch_1",
		Type: protocol.TypeMessagePush, Time: 1790000000000}
	payload, err := json.Marshal(protocol.MessagePushPayload{MessageID: "m", SenderID: "u", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	env.Payload = payload
	frame, err := env.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return frame
}

func isDone(fw *frameWatch) bool {
	select {
	case <-fw.done:
		return true
	default:
		return false
	}
}

// TestWriteWatchReportsTheLastByte writes a stream of frames (with
// WebSocket headers) in chunks of every size and checks that a watched
// frame is reported exactly when the chunk carrying its last byte is
// written: not earlier (a marker split between writes, a frame split over
// several writes, a similar packet_id, the marker quoted in a payload) and
// not later.
func TestWriteWatchReportsTheLastByte(t *testing.T) {
	const id = "pkt_abcdefghijkl_1"
	before := watchFrame(t, "pkt_abcdefghijkl_10", `,"packet_id":"`+id+`"`) // similar id; the marker quoted in text
	watched := watchFrame(t, id, string(bytes.Repeat([]byte("x"), 300)))
	after := watchFrame(t, "pkt_abcdefghijkl_2", "after")
	var stream []byte
	var end int
	for _, f := range [][]byte{before, watched, after} {
		stream = append(stream, 0x81, 0x7e, byte(len(f)>>8), byte(len(f))) // text frame, 16-bit length
		stream = append(stream, f...)
		if bytes.Equal(f, watched) {
			end = len(stream)
		}
	}
	for size := 1; size <= len(stream); size++ {
		var w writeWatch
		fw := w.add(id, watched)
		if fw == nil {
			t.Fatal("frame not watchable")
		}
		other := w.add("pkt_abcdefghijkl_3", watchFrame(t, "pkt_abcdefghijkl_3", "never written"))
		for off := 0; off < len(stream); off += size {
			chunk := stream[off:min(off+size, len(stream))]
			w.wrote(chunk)
			if got, want := isDone(fw), off+len(chunk) >= end; got != want {
				t.Fatalf("chunks of %d: after %d bytes reported %v, want %v (frame ends at %d)", size, off+len(chunk), got, want, end)
			}
		}
		if isDone(other) {
			t.Fatalf("chunks of %d: a frame never written was reported", size)
		}
		w.remove(fw)
		w.remove(other)
		if w.active.Load() != 0 || len(w.frames) != 0 {
			t.Fatalf("watches left: %d", w.active.Load())
		}
	}
}

// TestWriteWatchSeveralFramesInOneWrite: a corked burst carries two watched
// frames; both are reported by the one write.
func TestWriteWatchSeveralFramesInOneWrite(t *testing.T) {
	var w writeWatch
	a, b := watchFrame(t, "pkt_x_1", "a"), watchFrame(t, "pkt_x_2", "b")
	fa, fb := w.add("pkt_x_1", a), w.add("pkt_x_2", b)
	w.wrote(append(append([]byte{0x81, byte(len(a))}, a...), append([]byte{0x81, byte(len(b))}, b...)...))
	if !isDone(fa) || !isDone(fb) {
		t.Fatalf("reported %v %v, want both", isDone(fa), isDone(fb))
	}
	w.wrote([]byte("more")) // a reported frame is not reported twice
	if w.add("pkt_x_3", []byte(`{"no":"marker"}`)) != nil {
		t.Fatal("a frame without its packet_id member was watched")
	}
}
