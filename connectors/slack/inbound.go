package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// cursorKey is the channel state key of the last published ts per Slack
// conversation (map[conversation]ts), from which a reconnect catches up.
const cursorKey = "slack.cursor"

// lastConvKey is the channel state key of the conversation the last
// published message came from: where a proactive message of an unbound
// channel goes.
const lastConvKey = "slack.last_conversation"

// incoming is one person's message as the connector reads it, from an
// event or from conversations.history.
type incoming struct {
	Channel     string
	ChannelType string // im, mpim, channel, group ("" from history)
	TS          string
	ThreadTS    string // the thread's parent ts, "" for a top-level message
	User        string
	BotID       string
	SubType     string
	Text        string
	Files       []slackapi.File
	Mention     bool // an app_mention event
}

// id is the message's stable id: its conversation and ts.
func (m *incoming) id() string { return "slack-" + m.Channel + "-" + m.TS }

// replyTo is the reply context of an inbound message (the SDK keeps it per
// message): its conversation and thread, where its answer goes too.
type replyTo struct {
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts,omitempty"`
}

// runSocket is the Socket Mode connection of one app token, shared by every
// channel signed in with it (the SDK runs one per token and stops it with
// the last channel). slack-go reconnects by itself after a disconnect
// message or a dead connection; each time it is connected again, the
// connector reads what it missed from conversations.history. An envelope
// is acked to Slack only after its message is in the durable outbox of
// every channel it belongs to, so Slack sends an unacked one again.
//
// A revoked app token (invalid_auth, token_revoked) ends Run with
// connector.ErrRevoked: the SDK marks the channels revoked and stops.
func (c *Connector) runSocket(ctx context.Context, appToken string, m *connector.Members[binding]) error {
	chs := m.Channels()
	if len(chs) == 0 {
		return nil
	}
	smc := socketmode.New(c.api(chs[0].Binding.BotToken, appToken), socketmode.OptionLog(discard), socketmode.OptionDialer(c.dialer),
		socketmode.OptionReadLimit(4<<20))
	rctx, cancel := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- smc.RunContext(rctx) }()
	defer func() {
		cancel()
		<-runErr
		c.hc.CloseIdleConnections()
	}()
	for {
		select {
		case err := <-runErr:
			runErr <- err // for the deferred wait
			if ctx.Err() != nil {
				return nil
			}
			if isRevoked(wrap("apps.connections.open", err)) {
				return fmt.Errorf("slack: Socket Mode: the app-level token was revoked: %w", connector.ErrRevoked)
			}
			return fmt.Errorf("slack: Socket Mode ended: %w", wrap("apps.connections.open", err))
		case ev := <-smc.Events:
			c.onEvent(ctx, smc, m, ev)
		}
	}
}

// onEvent handles one event of the Socket Mode client.
func (c *Connector) onEvent(ctx context.Context, smc *socketmode.Client, m *connector.Members[binding], ev socketmode.Event) {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		m.Connected(ctx)
		c.backfill(ctx, m)
	case socketmode.EventTypeConnectionError:
		m.Degraded(ctx)
		if ce, ok := ev.Data.(*slackapi.ConnectionErrorEvent); ok {
			c.log.Warn("slack: Socket Mode connection failed", "attempt", ce.Attempt, "backoff", ce.Backoff, "err", wrap("apps.connections.open", ce.ErrorObj))
		}
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		c.log.Warn("slack: Socket Mode", "event", string(ev.Type))
	case socketmode.EventTypeEventsAPI:
		if ev.Request == nil {
			return
		}
		if err := c.onEventsAPI(ctx, m, ev); err != nil {
			// Not acked: Slack sends the envelope again.
			c.log.Warn("slack: event not published (left unacked for Slack's retry)", "envelope", ev.Request.EnvelopeID, "err", err)
			return
		}
		if err := smc.AckCtx(ctx, ev.Request.EnvelopeID, nil); err != nil {
			c.log.Warn("slack: ack", "envelope", ev.Request.EnvelopeID, "err", err)
		}
	case socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		// Not used: acked so that Slack does not show the user an error.
		if ev.Request != nil {
			_ = smc.AckCtx(ctx, ev.Request.EnvelopeID, nil)
		}
	}
}

// onEventsAPI publishes the message of a message or app_mention event.
func (c *Connector) onEventsAPI(ctx context.Context, m *connector.Members[binding], ev socketmode.Event) error {
	ea, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		return nil
	}
	in, ok := incomingOf(ea)
	if !ok {
		return nil
	}
	return c.deliver(ctx, m, &in)
}

// incomingOf reads the message of an Events API callback: a message or an
// app_mention event. Any other event reports false.
func incomingOf(ea slackevents.EventsAPIEvent) (incoming, bool) {
	if ea.Type != slackevents.CallbackEvent {
		return incoming{}, false
	}
	switch e := ea.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		in := incoming{Channel: e.Channel, ChannelType: e.ChannelType, TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp, User: e.User,
			BotID: e.BotID, SubType: e.SubType, Text: e.Text}
		if e.Message != nil {
			in.Files = e.Message.Files
			in.BotID = firstOf(in.BotID, e.Message.BotID)
		}
		return in, true
	case *slackevents.AppMentionEvent:
		return incoming{Channel: e.Channel, TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp, User: e.User, BotID: e.BotID,
			Text: e.Text, Files: e.Files, Mention: true}, true
	}
	return incoming{}, false
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// publishable reports whether a message is a person's new message:
// plain, a file share or a thread reply also sent to the channel; never a
// bot's (the connector's own posts come back as events), an edit, a
// deletion or a join.
func (m *incoming) publishable() bool {
	switch m.SubType {
	case "", "file_share", "thread_broadcast":
	default:
		return false
	}
	return m.BotID == "" && m.User != "" && m.TS != ""
}

// wants reports whether the channel of binding b serves message m: any
// message of its conversation, or, unbound, a DM or a mention of its bot;
// written after its sign-in.
func (b *binding) wants(m *incoming) bool {
	if m.User == b.BotUserID || tsLess(m.TS, b.Since) {
		return false
	}
	if b.Channel != "" {
		return m.Channel == b.Channel
	}
	return m.ChannelType == "im" || strings.HasPrefix(m.Channel, "D") || m.Mention || strings.Contains(m.Text, "<@"+b.BotUserID+">")
}

// tsLess orders two Slack timestamps ("seconds.micros").
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai < bi
	}
	af, bf = (af + "000000")[:6], (bf + "000000")[:6]
	return af < bf
}

// deliver publishes m on every channel of the app that serves it, then
// records its ts as the channel's cursor. Files are downloaded once, with
// the bot token of the first such channel.
func (c *Connector) deliver(ctx context.Context, m *connector.Members[binding], in *incoming) error {
	if !in.publishable() {
		return nil
	}
	if in.ThreadTS == in.TS {
		in.ThreadTS = "" // a thread's parent is answered in its thread only once it has one
	}
	var targets []connector.Member[binding]
	for _, mb := range m.Channels() {
		if mb.Channel.Authenticated() && mb.Binding.wants(in) {
			targets = append(targets, mb)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	text := unescape(in.Text)
	if b := targets[0].Binding; b.Channel == "" || in.Mention {
		text = strings.TrimSpace(strings.ReplaceAll(text, "<@"+b.BotUserID+">", ""))
	}
	files, notes, err := c.download(ctx, targets[0].Binding.BotToken, in.Files)
	if err != nil {
		return err
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	if text == "" && len(files) == 0 {
		return nil
	}
	rt := replyTo{Channel: in.Channel, ThreadTS: in.ThreadTS}
	var errs []error
	for _, mb := range targets {
		um := connector.UserMessage{MessageID: in.id(), Text: text, CreatedAt: tsTime(in.TS), ReplyContext: rt}
		for _, f := range files {
			um.Files = append(um.Files, connector.OutgoingFile{Name: f.name, MimeType: f.mime, Type: f.typ, Content: bytes.NewReader(f.data)})
		}
		// The agent's activity is shown in the thread of the message (none
		// for a top-level one, whose answer is no thread reply); saved
		// first, as the agent may report activity before Publish returns.
		if err := mb.Channel.SaveState(ctx, statusThreadKey, statusThread{Channel: in.Channel, ThreadTS: in.ThreadTS}); err != nil {
			c.log.Warn("slack: save status thread", "channel", mb.Channel.ID(), "err", err)
		}
		if _, err := mb.Channel.Publish(ctx, um); err != nil {
			if perr := protocol.AsError(err); perr != nil && perr.Code == protocol.CodeConnectionNotAuthenticated {
				continue // signed out meanwhile: nobody to deliver to
			}
			errs = append(errs, fmt.Errorf("channel %s: %w", mb.Channel.ID(), err))
			continue
		}
		c.advance(ctx, mb.Channel, in.Channel, in.TS)
	}
	return errors.Join(errs...)
}

// tsTime is the time of a Slack ts.
func tsTime(ts string) time.Time {
	s, f, _ := strings.Cut(ts, ".")
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((f + "000000")[:6], 10, 64)
	return time.Unix(sec, us*1000)
}

// unescape undoes Slack's escaping of &, < and > in message text
// (https://api.slack.com/reference/surfaces/formatting#escaping).
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// advance records ts as the channel's last published message of conv (a
// later one already recorded stays), and conv as its last conversation.
// A failure is logged: the outbox and its dedupe still hold the message.
func (c *Connector) advance(ctx context.Context, ch *connector.Channel, conv, ts string) {
	cur := map[string]string{}
	if _, err := ch.LoadState(ctx, cursorKey, &cur); err != nil {
		c.log.Warn("slack: load cursor", "channel", ch.ID(), "err", err)
	}
	if cur == nil {
		cur = map[string]string{}
	}
	if old, ok := cur[conv]; ok && !tsLess(old, ts) {
		return
	}
	cur[conv] = ts
	for len(cur) > MaxCursors { // forget the conversation quiet the longest
		oldest := ""
		for k, v := range cur {
			if oldest == "" || tsLess(v, cur[oldest]) {
				oldest = k
			}
		}
		delete(cur, oldest)
	}
	if err := ch.SaveState(ctx, cursorKey, cur); err != nil {
		c.log.Warn("slack: save cursor", "channel", ch.ID(), "err", err)
	}
	if err := ch.SaveState(ctx, lastConvKey, conv); err != nil {
		c.log.Warn("slack: save last conversation", "channel", ch.ID(), "err", err)
	}
}

// inboundFile is one downloaded file of an inbound message.
type inboundFile struct {
	name, mime string
	typ        protocol.FileType
	data       []byte
}

// limitWriter is a bytes.Buffer that refuses more than max bytes.
type limitWriter struct {
	buf bytes.Buffer
	max int64
}

var errTooLarge = errors.New("slack: file larger than the limit")

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len()+len(p)) > w.max {
		return 0, errTooLarge
	}
	return w.buf.Write(p)
}

// download fetches a message's files from url_private with the bot token.
// A file Slack will not hand out (too big, external, hidden) becomes a
// note in the text; a transient failure is returned so that the event is
// retried.
func (c *Connector) download(ctx context.Context, botToken string, files []slackapi.File) ([]inboundFile, []string, error) {
	var out []inboundFile
	var notes []string
	api := c.api(botToken, "")
	for _, f := range files {
		name := firstOf(f.Name, firstOf(f.Title, f.ID))
		u := firstOf(f.URLPrivateDownload, f.URLPrivate)
		switch {
		case f.Mode == "tombstone" || f.Mode == "hidden_by_limit" || u == "":
			notes = append(notes, fmt.Sprintf("[%s not forwarded: Slack does not share its content]", name))
			continue
		case f.IsExternal:
			notes = append(notes, fmt.Sprintf("[%s is an external file, not forwarded]", name))
			continue
		case int64(f.Size) > c.maxFileBytes:
			notes = append(notes, fmt.Sprintf("[%s of %d bytes not forwarded: larger than %d bytes]", name, f.Size, c.maxFileBytes))
			continue
		}
		w := &limitWriter{max: c.maxFileBytes}
		err := c.call(ctx, "files.download", func(ctx context.Context) error {
			w.buf.Reset()
			return api.GetFileContext(ctx, u, w)
		})
		if errors.Is(err, errTooLarge) {
			notes = append(notes, fmt.Sprintf("[%s not forwarded: larger than %d bytes]", name, c.maxFileBytes))
			continue
		}
		if err != nil {
			if isTemporary(err) {
				return nil, nil, err
			}
			c.log.Warn("slack: inbound file not forwarded", "file", name, "err", err)
			notes = append(notes, fmt.Sprintf("[%s not forwarded: Slack refused the download]", name))
			continue
		}
		data := w.buf.Bytes()
		mt := f.Mimetype
		if mt == "" {
			mt = http.DetectContentType(data)
			if i := strings.IndexByte(mt, ';'); i >= 0 {
				mt = mt[:i]
			}
		}
		out = append(out, inboundFile{name: name, mime: mt, typ: fileType(mt), data: data})
	}
	return out, notes, nil
}

// fileType maps a MIME type to the IM v2 file type.
func fileType(mt string) protocol.FileType {
	switch {
	case strings.HasPrefix(mt, "image/"):
		return protocol.FileImage
	case strings.HasPrefix(mt, "video/"):
		return protocol.FileVideo
	case strings.HasPrefix(mt, "audio/"):
		return protocol.FileAudio
	}
	return protocol.FileFile
}
