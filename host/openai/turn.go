package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/internal/xtrace"
	"github.com/xconn/xconn/protocol"
)

// blank is the white space trimmed from the start of an answer.
const blank = " \t\r\n"

// turn is the work on one user message: built and run by HandleMessage on
// the channel's worker, never shared.
type turn struct {
	a      *Agent
	msg    *host.UserMessage
	reply  host.ReplyStream
	host   Host // nil: no tools
	memory Memory
	images imageBudget

	history  []Message // the channel's memory, oldest first
	send     []Message // this turn's messages as sent (with images)
	remember []Message // this turn's messages as remembered
	names    toolNames
	calls    int // tool calls made (ids for calls the model sent without one)
}

// conversation is the memory key of the message's channel.
func (t *turn) conversation() string {
	if t.msg.UserChannelID != "" {
		return t.msg.UserChannelID
	}
	return t.msg.CardID + "/" + t.msg.ChannelID
}

func (t *turn) run(ctx context.Context) error {
	a := t.a
	log := a.log.With("card_id", t.msg.CardID, "channel", t.msg.ChannelID, "message_id", t.msg.MessageID)
	_ = t.reply.Activity(ctx, protocol.ActivityThinking, "")

	entries, err := t.memory.ListMemory(ctx, t.conversation())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("openai agent: memory not read; answering without it", "err", err)
	}
	t.history = window(loadHistory(entries), a.opts.MemoryMessages, a.opts.MemoryBytes)
	system := Message{Role: RoleSystem, Content: a.systemPrompt(ctx, t.host, t.msg)}

	var tools []Tool
	if t.host != nil {
		defs, err := t.host.Tools(ctx, t.msg.UserID, t.msg.SessionID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Warn("openai agent: tools not listed; answering without them", "err", err)
		}
		var dropped []string
		// The model talks in this conversation: the host fills each
		// connector tool's connector_channel_id from its channel.
		tools, t.names, dropped = project(host.ScopeFunctions(defs))
		if len(dropped) > 0 {
			log.Warn("openai agent: tools without a unique function name left out", "tools", dropped)
		}
	}

	send, remember := t.images.withFiles(RoleUser, t.msg.Text, t.msg.Files)
	t.send, t.remember = []Message{send}, []Message{remember}

	for round := 0; ; round++ {
		req := &Request{Model: a.opts.Model}
		req.Messages = append(append(append(make([]Message, 0, 1+len(t.history)+len(t.send)), system), t.history...), t.send...)
		if round < a.opts.MaxToolRounds {
			req.Tools = tools
		}
		if round > 0 {
			_ = t.reply.Activity(ctx, protocol.ActivityThinking, "")
		}
		comp, err := t.complete(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // shutting down: not accepted, redelivered later
			}
			return t.fail(ctx, log, err)
		}
		if len(comp.ToolCalls) > 0 && req.Tools == nil {
			comp.ToolCalls = nil // past the last round: calls are not run
		}
		for i := range comp.ToolCalls {
			if comp.ToolCalls[i].ID == "" {
				t.calls++
				comp.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d", t.msg.MessageID, t.calls)
			}
			comp.ToolCalls[i].Type = "function"
		}
		text := comp.Content
		if text == "" && len(comp.ToolCalls) == 0 {
			text = "(The model returned an empty answer.)"
		}
		if text != "" {
			if _, err := t.reply.Final(ctx, text); err != nil {
				return fmt.Errorf("final: %w", err)
			}
		}
		am := Message{Role: RoleAssistant, Content: comp.Content, ToolCalls: comp.ToolCalls}
		t.send = append(t.send, am)
		t.remember = append(t.remember, am)
		if len(comp.ToolCalls) == 0 {
			break
		}
		for _, call := range comp.ToolCalls {
			if err := t.runTool(ctx, call); err != nil {
				return err
			}
		}
	}
	t.persist(ctx, log)
	return nil
}

// complete runs one model request with retries, streaming its content as
// deltas. A request with images that the server rejects with 400 is sent
// again with notes instead of images.
func (t *turn) complete(ctx context.Context, req *Request) (*Completion, error) {
	a := t.a
	for {
		var comp *Completion
		err := a.opts.Retry.do(ctx, func() error {
			var err error
			started := false
			comp, err = a.client.Stream(ctx, req, func(s string) error {
				if !started {
					// Leading blank lines open no message: the final
					// text is trimmed alike.
					if s = strings.TrimLeft(s, blank); s == "" {
						return nil
					}
					started = true
				}
				_ = t.reply.Delta(ctx, s) // best effort: the final carries the whole text
				return nil
			})
			if comp != nil {
				comp.Content = strings.TrimLeft(comp.Content, blank)
			}
			return err
		}, func(attempt int, wait time.Duration, err error) {
			a.log.Info("openai agent: model request failed; retrying", "attempt", attempt, "wait", wait, "err", err)
		})
		var ae *APIError
		if err != nil && errors.As(err, &ae) && ae.StatusCode == http.StatusBadRequest && !t.images.off && hasImages(req.Messages) {
			a.log.Warn("openai agent: the model server refused images; sending notes instead", "err", err)
			t.images.off = true
			stripImages(req.Messages)
			stripImages(t.send)
			continue
		}
		if err == nil {
			a.succeeded()
		}
		return comp, err
	}
}

func hasImages(ms []Message) bool {
	for _, m := range ms {
		if m.Parts != nil {
			return true
		}
	}
	return false
}

func stripImages(ms []Message) {
	for i := range ms {
		ms[i].Parts = nil
	}
}

// fail answers a turn whose model request failed for good: the text that
// already streamed is kept, marked as cut off, or the user is told why in
// their words (failure.go); the user message stays in memory.
func (t *turn) fail(ctx context.Context, log *slog.Logger, err error) error {
	text := t.a.failure(log, err)
	var se *StreamError
	if errors.As(err, &se) && strings.TrimLeft(se.Partial.Content, blank) != "" {
		partial := strings.TrimLeft(se.Partial.Content, blank)
		text = partial + "\n\n[The answer was cut off: " + reason(err) + ".]"
		t.remember = append(t.remember, Message{Role: RoleAssistant, Content: partial})
	}
	if _, ferr := t.reply.Final(ctx, text); ferr != nil {
		return fmt.Errorf("final: %w", ferr)
	}
	t.persist(ctx, log)
	return nil
}

// runTool runs one tool call through the host and adds its result (or
// error) as a tool message, under an "execute_tool NAME" span when
// tracing is on (the host's tool.invoke request is its child).
func (t *turn) runTool(ctx context.Context, call ToolCall) (err error) {
	if tr := t.a.client.tracer; tr != nil {
		var span trace.Span
		ctx, span = tr.Start(ctx, "execute_tool "+call.Function.Name, trace.SpanKindInternal,
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", call.Function.Name),
			attribute.String("gen_ai.tool.call.id", call.ID))
		defer func() { xtrace.End(span, err) }()
	}
	def, ok := t.names[call.Function.Name]
	if !ok {
		t.addToolResult(call.ID, toolError(string(protocol.CodeUnknownTool), fmt.Sprintf("no tool named %q", call.Function.Name)), nil)
		return nil
	}
	name := def.Name
	if len(name) > protocol.MaxActivityToolNameBytes {
		name = name[:protocol.MaxActivityToolNameBytes]
	}
	_ = t.reply.Activity(ctx, protocol.ActivityTool, name)
	args := strings.TrimSpace(call.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	// Progress pushes arrive on the host's socket reader: they only poke
	// this goroutine, which repeats the tool activity.
	poke := make(chan struct{}, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-poke:
				_ = t.reply.Activity(ctx, protocol.ActivityTool, name)
			case <-stop:
				return
			}
		}
	})
	res, err := t.host.Invoke(ctx, t.msg.UserID, t.msg.SessionID, def.Name, json.RawMessage(args), call.ID,
		host.InConversation(t.msg.UserChannelID),
		host.WithProgress(func(*protocol.ToolProgressPayload) {
			select {
			case poke <- struct{}{}:
			default:
			}
		}))
	close(stop)
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		code := string(protocol.CodeOf(err, protocol.CodeInternal))
		msg := err.Error()
		if pe := protocol.AsError(err); pe != nil {
			msg = pe.Message
		}
		t.a.log.Info("openai agent: tool call failed", "tool", def.Name, "code", code)
		if t.a.client.tracer != nil {
			trace.SpanFromContext(ctx).SetStatus(codes.Error, code) // the execute_tool span; the model gets the error as the result
		}
		t.addToolResult(call.ID, toolError(code, msg), nil)
		return nil
	}
	out := strings.TrimSpace(string(modelOutput(res)))
	if out == "" || out == "null" {
		out = `{"ok":true}`
	}
	t.addToolResult(call.ID, out, resultFiles(res))
	_ = t.reply.Activity(ctx, protocol.ActivityThinking, "")
	return nil
}

func toolError(code, message string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	return string(b)
}

// addToolResult appends a tool message, cut to MaxToolResultBytes, and,
// for files the tool returned, a user message with their notes and images
// (tool messages carry text only).
func (t *turn) addToolResult(callID, content string, files []host.File) {
	if max := t.a.opts.MaxToolResultBytes; len(content) > max {
		content = shorten(content, max) + " [result cut]"
	}
	m := Message{Role: RoleTool, ToolCallID: callID, Content: content}
	t.send = append(t.send, m)
	t.remember = append(t.remember, m)
	if len(files) > 0 {
		send, remember := t.images.withFiles(RoleUser, "Files returned by the tool call "+callID+":", files)
		t.send = append(t.send, send)
		t.remember = append(t.remember, remember)
	}
}

// persist appends the turn to the channel's memory. A failure is logged:
// the user has the answer, only the memory of it is lost.
func (t *turn) persist(ctx context.Context, log *slog.Logger) {
	limit := min(t.a.opts.MemoryBytes, int64(maxStoredEntry))
	entries := make([][]byte, 0, len(t.remember))
	for _, m := range t.remember {
		b, err := encodeBounded(m, limit)
		if err != nil {
			continue // dropped; loadHistory drops what depended on it
		}
		entries = append(entries, b)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), memoryWriteTimeout)
	defer cancel()
	if err := t.memory.AppendMemory(ctx, t.conversation(), entries, t.a.opts.MemoryMessages, t.a.opts.MemoryBytes); err != nil {
		log.Warn("openai agent: memory not written", "err", err)
	}
}
