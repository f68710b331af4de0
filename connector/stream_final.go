package connector

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
)

// Final delivers a final assistant message: its text in parts of at most
// Limit, the first edited into the streamed message when there is one
// (posted as a new message when the edit budget is spent or the target
// refuses the edit), then its files (SendFile), in order. Each part and
// file done is recorded, so that a redelivery (after an error of a later
// call, or a restart) posts only what is missing. It has the signature of
// a MessageHandler: it returns nil only when every call succeeded (the SDK
// acks accepted then), else the first call's error, through Classify.
func (s *EditStream[R]) Final(ctx context.Context, ch *Channel, m *AssistantMessage) error {
	if err := s.final(ctx, ch, m); err != nil {
		if s.opts.Classify != nil {
			return s.opts.Classify(ctx, ch, err)
		}
		return err
	}
	return nil
}

func (s *EditStream[R]) final(ctx context.Context, ch *Channel, m *AssistantMessage) error {
	parts := s.opts.Limit.Split(m.Text)
	if len(m.Files) > 0 && s.opts.SendFile == nil {
		return fmt.Errorf("connector: message %s has files and the EditStream no SendFile", m.MessageID)
	}
	var rec streamRecord[R]
	stored, err := ch.LoadProgress(ctx, m.MessageID, &rec)
	if err != nil {
		ch.srv.log.Warn("connector: load delivery progress", "channel", ch.ID(), "err", err)
	}
	st := s.tracks.take(ch.ID(), m.MessageID)
	if st != nil {
		st.mu.Lock() // a delta of this message still at its call
		defer st.mu.Unlock()
		st.done = true
		if st.posted {
			rec.Ref, rec.Posted = st.ref, true
		}
	}
	total := len(parts) + len(m.Files)
	for i := rec.Done; i < total; i++ {
		part := MessagePart{MessageID: m.MessageID, InReplyTo: m.InReplyTo, Index: i, Key: partKey(ch.ID(), m.MessageID, i)}
		switch {
		case i == 0 && rec.Posted && len(parts) > 0:
			err = s.finalEdit(ctx, ch, st, rec.Ref, part, parts[0])
		case i < len(parts):
			_, err = s.opts.Send(ctx, ch, part, parts[i])
		default:
			_, err = s.opts.SendFile(ctx, ch, part, &m.Files[i-len(parts)])
		}
		if err != nil {
			return err
		}
		rec.Done = i + 1
		if i+1 < total {
			if err := ch.SaveProgress(ctx, m.MessageID, rec); err != nil {
				// The part was posted; a redelivery may post it again.
				ch.srv.log.Warn("connector: save delivery progress", "channel", ch.ID(), "err", err)
			}
			stored = true
		}
	}
	if rec.Posted && len(parts) == 0 {
		s.delete(ctx, ch, rec.Ref) // a final without text: the partial text goes
	}
	if stored || rec.Posted {
		if err := ch.ClearProgress(ctx, m.MessageID); err != nil {
			ch.srv.log.Warn("connector: clear delivery progress", "channel", ch.ID(), "err", err)
		}
	}
	return nil
}

// finalEdit turns the streamed message ref into the final's first part:
// nothing to do when it already shows it, else an edit, else (budget spent,
// ErrNotEditable) a new message and the old one deleted.
func (s *EditStream[R]) finalEdit(ctx context.Context, ch *Channel, st *stream[R], ref R, part MessagePart, text string) error {
	spent := st != nil && s.opts.MaxEdits > 0 && st.edits >= s.opts.MaxEdits
	if st != nil && st.posted && !spent && st.shown == maphash.String(s.seed, text) {
		return nil
	}
	if !spent {
		err := s.opts.Edit(ctx, ch, ref, text)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrNotEditable) {
			return err
		}
		ch.srv.log.Info("connector: the streamed message cannot be edited; posting the final anew",
			"channel", ch.ID(), "message_id", part.MessageID, "err", err)
	}
	if _, err := s.opts.Send(ctx, ch, part, text); err != nil {
		return err
	}
	s.delete(ctx, ch, ref)
	return nil
}

// delete removes a stale streamed message when the target can.
func (s *EditStream[R]) delete(ctx context.Context, ch *Channel, ref R) {
	if s.opts.Delete == nil {
		return
	}
	if err := s.opts.Delete(ctx, ch, ref); err != nil {
		ch.srv.log.Warn("connector: delete the streamed message", "channel", ch.ID(), "err", err)
	}
}
