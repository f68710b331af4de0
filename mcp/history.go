package mcp

import (
	"time"

	"github.com/xconn/xconn/host"
)

// Message is one message of a channel as an MCP client sees it: in
// messages_read results and in the history resource.
type Message struct {
	// Direction is "inbound" (from the user) or "outbound" (sent through
	// this server).
	Direction string `json:"direction"`
	MessageID string `json:"message_id,omitempty"`
	// ChannelID is the connector_channel_id: pass it to the send tools.
	ChannelID string        `json:"connector_channel_id"`
	CardID    string        `json:"connector_card_id"`
	Text      string        `json:"text"`
	Files     []MessageFile `json:"files,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
}

// MessageFile is a file of a message: its content is the resource URI.
type MessageFile struct {
	// FileRef is the host's unified file_ref: pass it to a tool argument
	// that takes a file.
	FileRef  string `json:"file_ref"`
	URI      string `json:"uri"`
	Filename string `json:"filename,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size"`
}

// fileURIPrefix starts the URI of the resource of a received file.
const fileURIPrefix = "xconn://files/"

func filesOf(fs []host.File) []MessageFile {
	out := make([]MessageFile, 0, len(fs))
	for _, f := range fs {
		out = append(out, MessageFile{FileRef: f.Ref, URI: fileURIPrefix + f.Ref, Filename: f.Filename, MimeType: f.MimeType, Size: f.Size})
	}
	return out
}

func timeOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t.UTC()
}

// history is the bounded recent history of one channel.
type history struct {
	msgs  []Message
	bytes int
	last  uint64 // in.seq at the last record: least recently active is dropped
}

func msgBytes(m Message) int {
	n := len(m.Text) + len(m.MessageID) + 64
	for _, f := range m.Files {
		n += len(f.FileRef) + len(f.Filename) + len(f.URI) + 32
	}
	return n
}

// record adds m to the history of ucID; in.mu is held.
func (in *Inbox) record(ucID string, m Message) {
	h := in.history[ucID]
	if h == nil {
		if len(in.history) >= in.opts.HistoryChannels {
			var oldest string
			var seq uint64
			for id, x := range in.history {
				if oldest == "" || x.last < seq {
					oldest, seq = id, x.last
				}
			}
			delete(in.history, oldest)
		}
		h = &history{}
		in.history[ucID] = h
	}
	in.seq++
	h.last = in.seq
	if len(m.Text) > in.opts.HistoryBytes/2 {
		m.Text = m.Text[:in.opts.HistoryBytes/2] + "…"
	}
	h.msgs = append(h.msgs, m)
	h.bytes += msgBytes(m)
	for len(h.msgs) > in.opts.HistoryMessages || (h.bytes > in.opts.HistoryBytes && len(h.msgs) > 1) {
		h.bytes -= msgBytes(h.msgs[0])
		h.msgs = h.msgs[1:]
	}
}

// Record adds an outbound message to the history of a user channel.
func (in *Inbox) recordOutbound(ucID string, m Message) {
	in.mu.Lock()
	m.Direction = "outbound"
	in.record(ucID, m)
	notify := in.notify
	in.mu.Unlock()
	if notify != nil {
		notify(ucID)
	}
}

// History returns a copy of the recent history of a user channel, oldest
// first.
func (in *Inbox) History(userChannelID string) []Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	h := in.history[userChannelID]
	if h == nil {
		return []Message{}
	}
	return append([]Message(nil), h.msgs...)
}
