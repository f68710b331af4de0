package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// PreflightTimeout bounds each request of [Client.Preflight].
const PreflightTimeout = 20 * time.Second

// maxOffered bounds the model names a [PreflightError] lists.
const maxOffered = 8

// PreflightProblem names what [Client.Preflight] found wrong.
type PreflightProblem int

// The problems of a [PreflightError]. The first four are the operator's
// to fix (Permanent); PreflightTransient may pass by itself.
const (
	// PreflightUnreachable: nothing answers at the base URL.
	PreflightUnreachable PreflightProblem = iota + 1
	// PreflightKey: the server refuses the API key (401, 403).
	PreflightKey
	// PreflightBaseURL: the server answers, but not as an OpenAI-compatible
	// API root (GET models and the chat endpoint are both unknown, 404).
	PreflightBaseURL
	// PreflightModel: the server does not know the model (404).
	PreflightModel
	// PreflightTransient: the server is rate limiting, failing (5xx) or
	// too slow just now.
	PreflightTransient
)

// PreflightError is what [Client.Preflight] found: the problem, the URL it
// asked (without credentials), the HTTP status (0 when there was no
// answer), a short detail (the server's message or the network error,
// without the key) and, for an unknown model, the models the server
// offers.
type PreflightError struct {
	Problem PreflightProblem
	URL     string
	Model   string
	Status  int
	Detail  string
	Offered []string
}

// Permanent reports whether the problem is the operator's to fix (a wrong
// base URL, key or model; nothing listening): it will not pass by itself.
func (e *PreflightError) Permanent() bool { return e.Problem != PreflightTransient }

func (e *PreflightError) Error() string {
	answered := ""
	if e.Status != 0 {
		answered = fmt.Sprintf("answered HTTP %d", e.Status)
		if e.Detail != "" {
			answered += ": " + e.Detail
		}
	} else if e.Detail != "" {
		answered = e.Detail
	}
	switch e.Problem {
	case PreflightUnreachable:
		return fmt.Sprintf("nothing answers at the model server %s (%s): start it or correct the base URL", e.URL, answered)
	case PreflightKey:
		return fmt.Sprintf("the model server refused the API key (%s %s): check OPENAI_API_KEY", e.URL, answered)
	case PreflightBaseURL:
		return fmt.Sprintf("%s is not an OpenAI-compatible API root (%s): the base URL usually ends in /v1, such as http://127.0.0.1:11434/v1", e.URL, answered)
	case PreflightModel:
		s := fmt.Sprintf("the model server at %s has no model %q (%s)", e.URL, e.Model, answered)
		if len(e.Offered) > 0 {
			s += "; it offers " + strings.Join(e.Offered, ", ")
		}
		return s
	}
	return fmt.Sprintf("the model server at %s is not answering normally just now (%s)", e.URL, answered)
}

// Preflight checks that the model server can answer for model before any
// user writes: GET {BaseURL}/models (free), and, when the model is not
// listed there, one tiny chat request (one token, not streamed: servers
// such as llama.cpp's serve any model name). It returns nil when the model
// can be used, else a [*PreflightError]; an error the caller's ctx caused
// is returned as it is. The key never appears in the error.
func (c *Client) Preflight(ctx context.Context, model string) error {
	base := strings.TrimRight(c.opts.BaseURL, "/")
	shown := redactURL(base)
	listed, offered, modelsStatus, err := c.listModels(ctx, base+"/models", model)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) { // it answers the connection, not the request: busy, or loading a model
			return &PreflightError{Problem: PreflightTransient, URL: shown + "/models", Model: model, Detail: fmt.Sprintf("no answer within %v", PreflightTimeout)}
		}
		return &PreflightError{Problem: PreflightUnreachable, URL: shown, Model: model, Detail: c.redact(rootCause(err))}
	case modelsStatus == http.StatusUnauthorized || modelsStatus == http.StatusForbidden:
		return &PreflightError{Problem: PreflightKey, URL: shown + "/models", Model: model, Status: modelsStatus}
	case modelsStatus == http.StatusTooManyRequests || modelsStatus >= 500:
		return &PreflightError{Problem: PreflightTransient, URL: shown + "/models", Model: model, Status: modelsStatus}
	case listed:
		return nil
	}
	status, detail, err := c.tinyRequest(ctx, model)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		detail := c.redact(rootCause(err))
		if errors.Is(err, context.DeadlineExceeded) {
			detail = fmt.Sprintf("no answer within %v", PreflightTimeout)
		}
		return &PreflightError{Problem: PreflightTransient, URL: shown + "/chat/completions", Model: model, Detail: detail}
	case status/100 == 2:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &PreflightError{Problem: PreflightKey, URL: shown + "/chat/completions", Model: model, Status: status, Detail: detail}
	case status == http.StatusNotFound && modelsStatus != http.StatusOK:
		return &PreflightError{Problem: PreflightBaseURL, URL: shown, Model: model, Status: status, Detail: detail}
	case status == http.StatusNotFound:
		return &PreflightError{Problem: PreflightModel, URL: shown, Model: model, Status: status, Detail: detail, Offered: offered}
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500:
		return &PreflightError{Problem: PreflightTransient, URL: shown + "/chat/completions", Model: model, Status: status, Detail: detail}
	}
	return nil // 400, 422: the server knows the endpoint and the model; the request's details are the turn's business
}

// listModels asks GET models: whether model is listed, the first names
// offered, and the status (0 with err on a network failure).
func (c *Client) listModels(ctx context.Context, u, model string) (listed bool, offered []string, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, nil, 0, err
	}
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	res, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return false, nil, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxErrorBody))
		return false, nil, res.StatusCode, nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.NewDecoder(io.LimitReader(res.Body, int64(c.opts.MaxResponseBytes))).Decode(&list) != nil || list.Data == nil {
		return false, nil, http.StatusNotFound, nil // not a model list: not an API root
	}
	for _, m := range list.Data {
		if m.ID == model {
			return true, nil, http.StatusOK, nil
		}
		if len(offered) < maxOffered {
			offered = append(offered, m.ID)
		}
	}
	slices.Sort(offered)
	return false, offered, http.StatusOK, nil
}

// tinyRequest sends a one-token chat request for model and returns the
// status and, for an error answer, the server's message (without the key).
func (c *Client) tinyRequest(ctx context.Context, model string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"model": model, "max_tokens": 1,
		"messages": []Message{{Role: RoleUser, Content: "Say OK."}}})
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	res, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, int64(c.opts.MaxResponseBytes)))
		return res.StatusCode, "", nil
	}
	var ae *APIError
	if errors.As(c.apiError(res), &ae) {
		return res.StatusCode, ae.Message, nil
	}
	return res.StatusCode, "", nil
}

// Preflight checks the agent's model server and model: see
// [Client.Preflight].
func (a *Agent) Preflight(ctx context.Context) error {
	return a.client.Preflight(ctx, a.opts.Model)
}

// redactURL hides the password of a URL with credentials in it.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

// rootCause is the innermost error text (without "Get url:" wrapping).
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
