// Package openai is a [host.Agent] backed by any server that speaks the
// OpenAI Chat Completions API: OpenAI itself, or Ollama, vLLM, llama.cpp's
// server and LM Studio on a local base URL.
//
//	agent, err := openai.New(openai.Options{Model: "llama3.2", BaseURL: "http://127.0.0.1:11434/v1"})
//	h, err := host.New(host.Options{Store: db, Delivery: db, Agent: agent})
//	agent.Bind(h, db) // the host runs the tools; db keeps each channel's memory
//
// For each user message the agent:
//
//   - builds the system message from Options.SystemPrompt, the channel the
//     user writes from and the connector's Skill (the one the host fetched
//     at admission, else GET /skill.md);
//   - replays the channel's memory: user, assistant and tool messages,
//     stored through [Memory] (*store.DB: encrypted, bounded, survives
//     restarts) within a window of MemoryMessages messages and MemoryBytes
//     bytes, starting at a user message;
//   - offers the channel's tools ([host.Host.Tools], the built-in channel
//     tools included) as functions named by their tool_id; ids the
//     provider's name rule refuses are given a stable name by
//     [FunctionName] and mapped back, never dropped; a connector tool is
//     offered without its connector_channel_id argument
//     ([host.ScopeFunctions]): the model writes {"text": "..."} and the
//     host fills in the conversation's channel ([host.InConversation]);
//   - streams the answer: chat.activity thinking while the model works,
//     its text as deltas, and each assistant message (before or after tool
//     calls) as its own final;
//   - runs each tool call through [host.Host.Invoke] with the model's
//     arguments (the channel argument filled or checked, see above) and
//     its call id as context.tool_call_id, with
//     activity tool (repeated on each tool.progress.push) and feeds the
//     result or the error back, for at most MaxToolRounds rounds;
//   - sends images (the user's files, the files of tool results) to the
//     model as image input, bounded by MaxImageBytes and MaxImages, and
//     other files as a one-line note with name, type, size and the host's
//     file_ref (which tools taking an upload reference accept).
//
// # Failures
//
// A model request is retried by [RetryPolicy]: 429 after its Retry-After
// (when not longer than MaxRetryAfter), 408, 409, 5xx, network errors and
// timeouts; never 400, 401, 403, 404 or 422, nor a stream that broke after
// its text reached the user. When a request fails for good the message is
// accepted and kept in memory, and the user is told in their words: a
// server that refuses the agent's setup (401, 403: the key; 404: the model
// or a base URL without /v1) gets "the agent is misconfigured — the
// operator has been told" and one ERROR log line with the URL and the
// server's answer (once until a request succeeds, however many messages
// arrive); a transient failure gets an apology that asks to try again.
// [Agent.Preflight] checks the base URL, key and model at start. HandleMessage returns an error only when its context
// ends or the host cannot take a final: the connector then delivers the
// message again.
//
// # Client
//
// [Client] is a small Chat Completions client over net/http, not the
// official SDK: the agent needs exact control of the streamed tool_call
// fragments, of servers that deviate from OpenAI (no [DONE], no index,
// error objects inside the stream, a JSON answer to a streaming request),
// of Retry-After and of which failures are retried; and it keeps go.mod
// free of a large dependency. The API key is sent as a Bearer token and
// never appears in an error or a log line.
//
// # Concurrency
//
// An [Agent] is safe for concurrent use and holds no goroutine between
// calls: the host calls it on each channel's ordered worker, so the
// messages of one channel are answered one at a time, in order, and
// different channels in parallel. A turn's only extra goroutine, which
// repeats the tool activity on progress pushes, ends with its tool call.
// [openaitest] is a fake server for tests.
package openai
