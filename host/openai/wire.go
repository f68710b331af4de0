package openai

import (
	"encoding/json"
)

// The Chat Completions wire types this package sends and reads: only the
// fields it uses, so that any OpenAI-compatible server (OpenAI, Ollama,
// vLLM, llama.cpp, LM Studio) understands the requests and unknown fields
// in answers are ignored.

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of a Chat Completions "messages" array. Content is
// the text; Parts, when set, replaces it with a content array (text and
// image_url parts, for vision models). An assistant message that only
// calls tools has empty Content and is sent with "content": null.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	Parts      []Part     `json:"-"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type messageJSON struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// MarshalJSON writes content as a string, a parts array, or null.
func (m Message) MarshalJSON() ([]byte, error) {
	j := messageJSON{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	var err error
	switch {
	case m.Parts != nil:
		j.Content, err = json.Marshal(m.Parts)
	case m.Content == "" && m.Role == RoleAssistant && len(m.ToolCalls) > 0:
		j.Content = json.RawMessage("null")
	default:
		j.Content, err = json.Marshal(m.Content)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads content as a string, null, or a parts array (whose
// text parts are joined into Content).
func (m *Message) UnmarshalJSON(b []byte) error {
	var j messageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Message{Role: j.Role, ToolCalls: j.ToolCalls, ToolCallID: j.ToolCallID}
	if len(j.Content) == 0 || string(j.Content) == "null" {
		return nil
	}
	if j.Content[0] == '[' {
		if err := json.Unmarshal(j.Content, &m.Parts); err != nil {
			return err
		}
		for _, p := range m.Parts {
			m.Content += p.Text
		}
		return nil
	}
	return json.Unmarshal(j.Content, &m.Content)
}

// Part is one element of a content array: {"type":"text","text":...} or
// {"type":"image_url","image_url":{"url":"data:..."}}.
type Part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image of an image_url part: an https or data: URL.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function of a [ToolCall]: its name and its
// arguments, a JSON text written by the model (possibly invalid).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one entry of the "tools" array.
type Tool struct {
	Type     string   `json:"type"` // "function"
	Function Function `json:"function"`
}

// Function declares a function to the model.
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is a Chat Completions request body.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	Stream   bool      `json:"stream"`
}

// Completion is one assistant answer, assembled from a stream (or read
// from a non-streaming answer).
type Completion struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
}

// chunk is one streamed "chat.completion.chunk", or a non-streaming
// "chat.completion" (message instead of delta), or an error object some
// servers send inside the stream.
type chunk struct {
	Choices []struct {
		Delta        *chunkDelta `json:"delta"`
		Message      *chunkDelta `json:"message"`
		FinishReason *string     `json:"finish_reason"`
	} `json:"choices"`
	Error *errorBody `json:"error"`
}

type chunkDelta struct {
	Content   *string         `json:"content"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// errorBody is the "error" object of an error answer:
// {"error":{"message":...,"type":...,"code":...}}. Some servers send a bare
// string instead.
type errorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (e *errorBody) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Message)
	}
	type plain errorBody
	return json.Unmarshal(b, (*plain)(e))
}
