package openai

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// DefaultMisconfigured is the final sent when the model server refuses the
// agent's setup (its key, model or base URL): retrying will not help, the
// person who runs the agent has to act, and the log says what is wrong.
const DefaultMisconfigured = "Sorry, I cannot answer: the agent is misconfigured — the operator has been told."

// failure is what the agent does with a model request that failed for
// good: it logs the cause with the URL asked (never the key) and returns
// the words for the user. A misconfiguration (the same status and code
// again) is logged once until a request succeeds, not once per message.
func (a *Agent) failure(log *slog.Logger, err error) string {
	var ae *APIError
	if errors.As(err, &ae) && ae.Misconfigured() {
		cause := ae.Error()
		if prev := a.misconfig.Swap(&cause); prev == nil || *prev != cause {
			log.Error("openai agent: the model server refuses the agent's setup; users are told the agent is misconfigured",
				"url", a.client.Endpoint(), "err", err, "fix", ae.fix())
		}
		return a.opts.Misconfigured
	}
	log.Error("openai agent: no answer from the model", "url", a.client.Endpoint(), "err", err)
	if errors.As(err, &ae) && !ae.Retryable() {
		return "Sorry, the model server rejected this message (" + reason(err) + ")."
	}
	return a.opts.Apology + " (" + reason(err) + ")"
}

// succeeded notes a model request that worked: a later misconfiguration
// is logged again.
func (a *Agent) succeeded() { a.misconfig.Store(nil) }

// reason names a model failure in a few words for the user.
func reason(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		switch {
		case ae.StatusCode == http.StatusTooManyRequests:
			return "the model server is rate limiting"
		case ae.StatusCode >= 500 || ae.StatusCode == 0:
			return "the model server failed"
		case ae.StatusCode == http.StatusRequestEntityTooLarge:
			return "the message is too large for it"
		}
		return "the model server rejected the request"
	}
	if errors.Is(err, errIdle) || errors.Is(err, errTooLong) || errors.Is(err, context.DeadlineExceeded) {
		return "the model server did not answer in time"
	}
	return "the model server could not be reached"
}
