package telegram

// The Bot API objects the connector reads, with only the fields it uses
// (https://core.telegram.org/bots/api#available-types).

// User is a Telegram user or bot (getMe).
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// Chat is a Telegram chat (getChat, Message.chat).
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
}

// name is how a chat is shown.
func (c Chat) name() string {
	switch {
	case c.Title != "":
		return c.Title
	case c.Username != "":
		return "@" + c.Username
	}
	return c.FirstName
}

// fileObject is the common part of PhotoSize, Document, Voice, Audio and
// Video.
type fileObject struct {
	FileID   string `json:"file_id"`
	FileSize int64  `json:"file_size"`
	FileName string `json:"file_name"`
	MimeType string `json:"mime_type"`
}

// Message is an inbound message (Update.message, Update.channel_post).
type Message struct {
	MessageID int64 `json:"message_id"`
	// MessageThreadID and IsTopicMessage name the forum topic of a
	// message in a supergroup with topics.
	MessageThreadID int64        `json:"message_thread_id"`
	IsTopicMessage  bool         `json:"is_topic_message"`
	Date            int64        `json:"date"`
	Chat            Chat         `json:"chat"`
	From            *User        `json:"from"`
	Text            string       `json:"text"`
	Caption         string       `json:"caption"`
	Photo           []fileObject `json:"photo"`
	Document        *fileObject  `json:"document"`
	Voice           *fileObject  `json:"voice"`
	Audio           *fileObject  `json:"audio"`
	Video           *fileObject  `json:"video"`
	VideoNote       *fileObject  `json:"video_note"`
	Animation       *fileObject  `json:"animation"`
}

// Update is one getUpdates item.
type Update struct {
	UpdateID    int64    `json:"update_id"`
	Message     *Message `json:"message"`
	ChannelPost *Message `json:"channel_post"`
}

// WebhookInfo is getWebhookInfo's answer.
type WebhookInfo struct {
	URL                string `json:"url"`
	PendingUpdateCount int    `json:"pending_update_count"`
}

// File is getFile's answer.
type File struct {
	FileID   string `json:"file_id"`
	FileSize int64  `json:"file_size"`
	FilePath string `json:"file_path"`
}

// sentMessage is the part of a sent Message the connector keeps.
type sentMessage struct {
	MessageID int64 `json:"message_id"`
}
