package wechat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Wire types of inbound messages (fact sheet §8).
type wxMessage struct {
	Seq          int64       `json:"seq"`
	MessageID    json.Number `json:"message_id"`
	FromUserID   string      `json:"from_user_id"`
	CreateTimeMs int64       `json:"create_time_ms"`
	MessageType  int         `json:"message_type"`
	ItemList     []wxItem    `json:"item_list"`
	ContextToken string      `json:"context_token"`
}

type wxItem struct {
	Type      int                    `json:"type"`
	TextItem  *struct{ Text string } `json:"text_item"`
	ImageItem *struct {
		Media      *cdnMedia `json:"media"`
		ThumbMedia *cdnMedia `json:"thumb_media"`
		AESKey     string    `json:"aeskey"`
	} `json:"image_item"`
	VoiceItem *struct {
		Media *cdnMedia `json:"media"`
		Text  string    `json:"text"`
	} `json:"voice_item"`
	FileItem *struct {
		Media    *cdnMedia `json:"media"`
		FileName string    `json:"file_name"`
	} `json:"file_item"`
	VideoItem *struct {
		Media      *cdnMedia `json:"media"`
		ThumbMedia *cdnMedia `json:"thumb_media"`
	} `json:"video_item"`
	RefMsg *struct {
		MessageItem *wxItem `json:"message_item"`
		Title       string  `json:"title"`
	} `json:"ref_msg"`
}

// addConsumer registers the getupdates loop, one per bot account. A bot
// serves one channel: two channels would both answer every message.
func (c *Connector) addConsumer() error {
	_, err := connector.AddConsumer(c.srv, connector.Consumer[string, Binding]{
		Key:         func(b Binding) string { return b.BotID },
		Run:         c.run,
		MaxChannels: 1,
	})
	return err
}

// run is one bot account's getupdates loop (§6, §7): notifystart before,
// notifystop after; the cursor is saved only once every returned message
// is in the durable outbox. An answered getupdates reports m.Connected; a
// session iLink expired (errcode -14, §4) returns connector.ErrBindingExpired,
// and the SDK marks the channel expired and stops the loop until the user
// scans again.
func (c *Connector) run(ctx context.Context, botID string, m *connector.Members[Binding]) error {
	log := c.srv.Logger()
	for ctx.Err() == nil {
		mem := m.Channels()
		if len(mem) == 0 {
			return errors.New("wechat: no channel for this bot")
		}
		ch, b := mem[0].Channel, mem[0].Binding
		// The SDK starts a new key's consumer before the channel's binding
		// is replaced, so Members can still show the previous bot for a
		// moment: never poll with another bot's token.
		if b.BotID != botID {
			if !sleep(ctx, time.Second) {
				return nil
			}
			continue
		}
		if err := c.poll(ctx, ch, b, m); err != nil {
			if errors.Is(err, errSessionExpired) {
				log.Warn("wechat: the WeChat session expired (errcode -14); scan the QR code again", "channel", ch.ID(), "call", "getupdates")
				return fmt.Errorf("wechat: getupdates: %w: %w", connector.ErrBindingExpired, err)
			}
			return err
		}
	}
	log.Debug("wechat: getupdates loop stopped", "bot", connector.Hint(botID))
	return nil
}

// poll runs getupdates for one binding until ctx ends, the binding changes
// or the session expires.
func (c *Connector) poll(ctx context.Context, ch *connector.Channel, b Binding, m *connector.Members[Binding]) error {
	api := &ilink{hc: c.hc, base: orStr(b.BaseURL, c.opts.APIURL), token: b.BotToken, agent: c.agent()}
	notify := func(ctx context.Context, what string) error {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return api.post(ctx, what, "ilink/bot/msg/"+what, nil, struct {
			Base baseInfo `json:"base_info"`
		}{api.baseInfo()}, nil)
	}
	if err := notify(ctx, "notifystart"); err != nil {
		if errors.Is(err, errSessionExpired) || ctx.Err() != nil {
			return err
		}
		c.srv.Logger().Info("wechat: notifystart", "err", err)
	}
	defer func() {
		if err := notify(context.WithoutCancel(ctx), "notifystop"); err != nil {
			c.srv.Logger().Debug("wechat: notifystop", "err", err)
		}
	}()
	// The cursor belongs to one bot account: a channel signed in to
	// another bot starts from "".
	var saved savedCursor
	if _, err := ch.LoadState(ctx, stateCursor, &saved); err != nil {
		return fmt.Errorf("wechat: load cursor: %w", err)
	}
	cursor := ""
	if saved.Bot == b.BotID {
		cursor = saved.Buf
	}
	timeout, failures := c.opts.LongPoll, 0
	for ctx.Err() == nil {
		if cur, err := c.clients.Binding(ch); err != nil || cur != b {
			return nil // signed in again: start over with the new binding
		}
		msgs, next, hint, err := c.getUpdates(ctx, api, cursor, timeout)
		if err == nil {
			err = c.deliver(ctx, ch, msgs)
		}
		if err != nil {
			if errors.Is(err, errSessionExpired) || ctx.Err() != nil {
				return err
			}
			failures++
			wait := c.opts.RetryDelay
			if failures >= 3 {
				wait, failures = c.opts.RetryBackoff, 0
				m.Degraded(ctx) // retried in this loop, so the SDK does not see it
			}
			c.srv.Logger().Warn("wechat: getupdates", "retry_in", wait.String(), "err", err)
			if !sleep(ctx, wait) {
				return nil
			}
			continue
		}
		failures = 0
		m.Connected(ctx)
		if hint > 0 {
			timeout = hint
		}
		if next != "" && next != cursor {
			cursor = next
			if err := ch.SaveState(ctx, stateCursor, savedCursor{Bot: b.BotID, Buf: cursor}); err != nil {
				c.srv.Logger().Warn("wechat: save cursor", "err", err)
			}
		}
	}
	return nil
}

// savedCursor is the persisted get_updates_buf of a bot account.
type savedCursor struct {
	Bot string `json:"bot"`
	Buf string `json:"buf"`
}

// getUpdates makes one long poll; a client-side timeout is an empty answer
// with the cursor unchanged (§7).
func (c *Connector) getUpdates(ctx context.Context, api *ilink, cursor string, timeout time.Duration) ([]wxMessage, string, time.Duration, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	req := struct {
		Buf  string   `json:"get_updates_buf"`
		Base baseInfo `json:"base_info"`
	}{cursor, api.baseInfo()}
	var out struct {
		Msgs    []wxMessage `json:"msgs"`
		Buf     string      `json:"get_updates_buf"`
		Timeout int64       `json:"longpolling_timeout_ms"`
	}
	err := api.post(pctx, "getupdates", "ilink/bot/getupdates", nil, req, &out)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, "", 0, nil
		}
		return nil, "", 0, err
	}
	return out.Msgs, out.Buf, time.Duration(out.Timeout) * time.Millisecond, nil
}

// deliver publishes each user message durably and records its sender's
// context_token.
func (c *Connector) deliver(ctx context.Context, ch *connector.Channel, msgs []wxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	cl, err := c.clients.Get(ch)
	if err != nil {
		return connector.Temporary(err)
	}
	for _, wm := range msgs {
		if wm.MessageType == 2 {
			continue // the bot's own message
		}
		um, err := c.userMessage(ctx, wm)
		if err != nil {
			return err
		}
		if um.Text == "" && len(um.Files) == 0 {
			continue // nothing this connector can show (tool items, empty)
		}
		if err := ch.Publish(ctx, um); err != nil {
			return fmt.Errorf("wechat: publish: %w", err)
		}
		if wm.FromUserID != "" {
			if err := cl.remember(ctx, wm.FromUserID, wm.ContextToken); err != nil {
				return err
			}
		}
	}
	return nil
}

// messageID is the stable idempotency key of an inbound message.
func messageID(wm wxMessage) string {
	if id := wm.MessageID.String(); id != "" && id != "0" {
		return "wx_" + id
	}
	b, _ := json.Marshal(wm)
	sum := sha256.Sum256(b)
	return "wx_h" + hex.EncodeToString(sum[:12])
}

// userMessage turns a WeixinMessage into a UserMessage: text, a quote,
// the voice transcript, and media downloaded and decrypted now.
func (c *Connector) userMessage(ctx context.Context, wm wxMessage) (connector.UserMessage, error) {
	um := connector.UserMessage{MessageID: messageID(wm)}
	if wm.CreateTimeMs > 0 {
		um.CreatedAt = time.UnixMilli(wm.CreateTimeMs)
	}
	var text, quote []string
	var quoted []*wxItem
	for i := range wm.ItemList {
		it := &wm.ItemList[i]
		if it.RefMsg != nil {
			q := it.RefMsg.Title
			if ri := it.RefMsg.MessageItem; ri != nil {
				if ri.TextItem != nil && ri.TextItem.Text != "" {
					q = ri.TextItem.Text
				}
				quoted = append(quoted, ri)
			}
			if q != "" {
				quote = append(quote, "> "+strings.ReplaceAll(q, "\n", "\n> "))
			}
		}
		t, f, err := c.item(ctx, um.MessageID, len(um.Files), it)
		if err != nil {
			return um, err
		}
		if t != "" {
			text = append(text, t)
		}
		um.Files = append(um.Files, f...)
	}
	if len(um.Files) == 0 { // media may sit in the quoted message (§12)
		for _, ri := range quoted {
			if ri.Type == 1 {
				continue
			}
			_, f, err := c.item(ctx, um.MessageID, len(um.Files), ri)
			if err != nil {
				return um, err
			}
			um.Files = append(um.Files, f...)
		}
	}
	um.Text = strings.Join(append(quote, text...), "\n")
	return um, nil
}

// item returns the text and files of one item. A media item that cannot
// be used becomes a note in the text; a transient failure is returned so
// that the cursor stays and the message is read again.
func (c *Connector) item(ctx context.Context, msgID string, n int, it *wxItem) (string, []connector.OutgoingFile, error) {
	var (
		media    *cdnMedia
		hexKey   string
		name     string
		kind     protocol.FileType
		mimeType string
		text     string
	)
	switch {
	case it.Type == 1 && it.TextItem != nil:
		return it.TextItem.Text, nil, nil
	case it.Type == 2 && it.ImageItem != nil:
		media, hexKey, kind = it.ImageItem.Media, it.ImageItem.AESKey, protocol.FileImage
		if !media.usable() {
			media = it.ImageItem.ThumbMedia
		}
	case it.Type == 3 && it.VoiceItem != nil:
		media, kind, mimeType, name = it.VoiceItem.Media, protocol.FileAudio, "audio/silk", "voice.silk"
		text = it.VoiceItem.Text
	case it.Type == 4 && it.FileItem != nil:
		media, kind, name = it.FileItem.Media, protocol.FileFile, path.Base(it.FileItem.FileName)
	case it.Type == 5 && it.VideoItem != nil:
		media, kind = it.VideoItem.Media, protocol.FileVideo
		if !media.usable() {
			media = it.VideoItem.ThumbMedia
		}
	default:
		return "", nil, nil // tool call items and unknown types carry nothing to show
	}
	if !media.usable() {
		return joinText(text, "["+string(kind)+" without content]"), nil, nil
	}
	data, err := c.download(ctx, media, hexKey)
	if err != nil {
		if errors.Is(err, errBadMedia) {
			c.srv.Logger().Warn("wechat: inbound media unusable", "message", msgID, "err", err)
			return joinText(text, "["+string(kind)+" could not be downloaded]"), nil, nil
		}
		return "", nil, err
	}
	if mimeType == "" {
		mimeType = mime.TypeByExtension(path.Ext(name))
		if mimeType == "" || name == "" {
			mimeType = http.DetectContentType(data)
		}
	}
	if name == "" || name == "." || name == "/" {
		ext := ".bin"
		if exts, _ := mime.ExtensionsByType(strings.SplitN(mimeType, ";", 2)[0]); len(exts) > 0 {
			ext = exts[0]
		}
		name = fmt.Sprintf("%s-%d%s", kind, n+1, ext)
	}
	f := connector.OutgoingFile{Name: name, MimeType: mimeType, Type: kind, Content: bytes.NewReader(data)}
	return text, []connector.OutgoingFile{f}, nil
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
