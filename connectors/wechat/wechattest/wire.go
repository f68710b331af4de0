package wechattest

import "encoding/json"

// The iLink wire types the fake speaks (fact sheet §8). Numbers that are
// uint64 on the wire (message_id) are kept as json.Number so that nothing
// is lost.

// Message is a WeixinMessage (§8.1).
type Message struct {
	Seq          int64         `json:"seq,omitempty"`
	MessageID    json.Number   `json:"message_id,omitempty"`
	FromUserID   string        `json:"from_user_id,omitempty"`
	ToUserID     string        `json:"to_user_id,omitempty"`
	ClientID     string        `json:"client_id,omitempty"`
	CreateTimeMs int64         `json:"create_time_ms,omitempty"`
	SessionID    string        `json:"session_id,omitempty"`
	GroupID      string        `json:"group_id,omitempty"`
	MessageType  int           `json:"message_type"`
	MessageState int           `json:"message_state"`
	ItemList     []MessageItem `json:"item_list"`
	ContextToken string        `json:"context_token,omitempty"`
}

// Item types of MessageItem.Type (§8.2).
const (
	ItemText  = 1
	ItemImage = 2
	ItemVoice = 3
	ItemFile  = 4
	ItemVideo = 5
)

// MessageItem is one content item (§8.2).
type MessageItem struct {
	Type      int        `json:"type"`
	MsgID     string     `json:"msg_id,omitempty"`
	TextItem  *TextItem  `json:"text_item,omitempty"`
	ImageItem *ImageItem `json:"image_item,omitempty"`
	VoiceItem *VoiceItem `json:"voice_item,omitempty"`
	FileItem  *FileItem  `json:"file_item,omitempty"`
	VideoItem *VideoItem `json:"video_item,omitempty"`
	RefMsg    *RefMsg    `json:"ref_msg,omitempty"`
}

// TextItem is a text payload.
type TextItem struct {
	Text string `json:"text"`
}

// CDNMedia points at an encrypted CDN object (§8.2).
type CDNMedia struct {
	EncryptQueryParam string `json:"encrypt_query_param,omitempty"`
	AESKey            string `json:"aes_key,omitempty"`
	EncryptType       int    `json:"encrypt_type,omitempty"`
	FullURL           string `json:"full_url,omitempty"`
}

// ImageItem is an image payload; AESKey is the hex of the raw key.
type ImageItem struct {
	Media      *CDNMedia `json:"media,omitempty"`
	ThumbMedia *CDNMedia `json:"thumb_media,omitempty"`
	AESKey     string    `json:"aeskey,omitempty"`
	MidSize    int64     `json:"mid_size,omitempty"`
}

// VoiceItem is a voice payload with its optional server transcript.
type VoiceItem struct {
	Media         *CDNMedia `json:"media,omitempty"`
	EncodeType    int       `json:"encode_type,omitempty"`
	BitsPerSample int       `json:"bits_per_sample,omitempty"`
	SampleRate    int       `json:"sample_rate,omitempty"`
	Playtime      int64     `json:"playtime,omitempty"`
	Text          string    `json:"text,omitempty"`
}

// FileItem is a file payload; Len is the plaintext size as a decimal
// string.
type FileItem struct {
	Media    *CDNMedia `json:"media,omitempty"`
	FileName string    `json:"file_name,omitempty"`
	MD5      string    `json:"md5,omitempty"`
	Len      string    `json:"len,omitempty"`
}

// VideoItem is a video payload.
type VideoItem struct {
	Media      *CDNMedia `json:"media,omitempty"`
	VideoSize  int64     `json:"video_size,omitempty"`
	ThumbMedia *CDNMedia `json:"thumb_media,omitempty"`
}

// RefMsg is a quoted message.
type RefMsg struct {
	MessageItem *MessageItem `json:"message_item,omitempty"`
	Title       string       `json:"title,omitempty"`
}

// baseInfo is the base_info object of every authenticated POST (§3).
type baseInfo struct {
	ChannelVersion string `json:"channel_version"`
	BotAgent       string `json:"bot_agent"`
}
