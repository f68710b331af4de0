package wechattest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Inbound is a peer message to inject. Text, and at most one of Image,
// File, Voice and Video, make its items.
type Inbound struct {
	// BotID is the receiving bot ("" for the latest account).
	BotID string `json:"bot_id,omitempty"`
	// From is the peer's user id (default "u_peer@im.wechat").
	From string `json:"from,omitempty"`
	Text string `json:"text,omitempty"`
	// Image, File (with FileName), Voice (with Transcript) and Video are
	// stored encrypted on the CDN and referenced by the message.
	Image      []byte `json:"image,omitempty"`
	File       []byte `json:"file,omitempty"`
	FileName   string `json:"file_name,omitempty"`
	Voice      []byte `json:"voice,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	Video      []byte `json:"video,omitempty"`
	// ImageHexKey also puts the image key in image_item.aeskey (hex), as
	// the server does for images.
	ImageHexKey bool `json:"image_hex_key,omitempty"`
	// Keys overrides Options.MediaKeys for this message's media.aes_key.
	Keys *KeyEncoding `json:"-"`
	// QuoteTitle and QuoteText add a ref_msg (a quoted message).
	QuoteTitle string `json:"quote_title,omitempty"`
	QuoteText  string `json:"quote_text,omitempty"`
}

// Inject queues a peer message for the bot's getupdates and returns it
// as the server delivers it (with its fresh context_token).
func (s *Server) Inject(in Inbound) (Message, error) {
	s.mu.Lock()
	a, err := s.accountLocked(in.BotID)
	s.mu.Unlock()
	if err != nil {
		return Message{}, err
	}
	if in.From == "" {
		in.From = "u_peer@im.wechat"
	}
	enc := s.opts.MediaKeys
	if in.Keys != nil {
		enc = *in.Keys
	}
	media := func(plain []byte) (*CDNMedia, []byte, error) {
		key := newKey()
		ct, err := Encrypt(key, plain)
		if err != nil {
			return nil, nil, err
		}
		return &CDNMedia{EncryptQueryParam: s.store(key, ct), AESKey: encodeKey(key, enc), EncryptType: 1}, key, nil
	}
	var items []MessageItem
	if in.Text != "" {
		items = append(items, MessageItem{Type: ItemText, TextItem: &TextItem{Text: in.Text}})
	}
	switch {
	case in.Image != nil:
		m, key, err := media(in.Image)
		if err != nil {
			return Message{}, err
		}
		it := &ImageItem{Media: m, MidSize: int64(len(in.Image)/16+1) * 16}
		if in.ImageHexKey {
			it.AESKey = hex.EncodeToString(key)
		}
		items = append(items, MessageItem{Type: ItemImage, ImageItem: it})
	case in.File != nil:
		m, _, err := media(in.File)
		if err != nil {
			return Message{}, err
		}
		sum := md5.Sum(in.File)
		items = append(items, MessageItem{Type: ItemFile, FileItem: &FileItem{Media: m, FileName: in.FileName,
			MD5: hex.EncodeToString(sum[:]), Len: strconv.Itoa(len(in.File))}})
	case in.Voice != nil:
		m, _, err := media(in.Voice)
		if err != nil {
			return Message{}, err
		}
		items = append(items, MessageItem{Type: ItemVoice, VoiceItem: &VoiceItem{Media: m, EncodeType: 6,
			SampleRate: 16000, BitsPerSample: 16, Playtime: 1200, Text: in.Transcript}})
	case in.Video != nil:
		m, _, err := media(in.Video)
		if err != nil {
			return Message{}, err
		}
		items = append(items, MessageItem{Type: ItemVideo, VideoItem: &VideoItem{Media: m, VideoSize: int64(len(in.Video)/16+1) * 16}})
	}
	if in.QuoteTitle != "" || in.QuoteText != "" {
		ref := &RefMsg{Title: in.QuoteTitle}
		if in.QuoteText != "" {
			ref.MessageItem = &MessageItem{Type: ItemText, TextItem: &TextItem{Text: in.QuoteText}}
		}
		if len(items) == 0 {
			items = append(items, MessageItem{Type: ItemText, TextItem: &TextItem{}})
		}
		items[0].RefMsg = ref
	}
	if len(items) == 0 {
		return Message{}, errors.New("wechattest: an inbound message needs text or media")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgSeq++
	now := time.Now()
	m := Message{Seq: s.msgSeq, MessageID: json.Number(strconv.FormatUint(7301234567890000000+uint64(s.msgSeq), 10)),
		FromUserID: in.From, ToUserID: a.botID, CreateTimeMs: now.UnixMilli(), SessionID: "s_" + randHex(4),
		MessageType: 1, MessageState: 2, ItemList: items, ContextToken: "ctx_" + randHex(16)}
	a.msgs = append(a.msgs, m)
	if over := len(a.msgs) - s.opts.MaxMessages; over > 0 {
		a.msgs = a.msgs[over:]
		a.first += over
	}
	if a.contexts == nil {
		a.contexts = map[string]string{}
	}
	a.contexts[in.From] = m.ContextToken
	close(a.wake)
	a.wake = make(chan struct{})
	return m, nil
}

// handleInject is POST /fake/inject with an Inbound as JSON (media as
// base64): it answers the injected message.
func (s *Server) handleInject(w http.ResponseWriter, r *http.Request) {
	var in Inbound
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes)).Decode(&in); err != nil {
		http.Error(w, "want an Inbound as JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	m, err := s.Inject(in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	writeJSON(w, m)
}

// handleSent is GET /fake/sent[?bot_id=]: what the bot sent, as JSON.
func (s *Server) handleSent(w http.ResponseWriter, r *http.Request) {
	out := s.Sent(r.URL.Query().Get("bot_id"))
	if out == nil {
		out = []Sent{}
	}
	writeJSON(w, out)
}
