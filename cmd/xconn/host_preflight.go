package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xconn/xconn/protocol"
)

// hostPreflightTimeout bounds each request of hostPreflight.
const hostPreflightTimeout = 10 * time.Second

// hostPreflight recognises the user's own mistakes before anything else
// runs, each in one sentence (exit 1): nothing answers at baseURL, baseURL
// is not a Connector Server's root (a page under it, another service), or
// the Connector refuses the API key (with the Connector's own message). A
// baseURL that is not an absolute http(s) URL is a usage error (exit 2).
// scrub removes secrets from what the Connector said.
func hostPreflight(ctx context.Context, baseURL, apiKey string, scrub func(string) string) error {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(fmt.Errorf("BASE_URL %q: want the connector's absolute http(s) URL, such as http://127.0.0.1:8080", baseURL))
	}
	base := strings.TrimSuffix(u.Redacted(), "/")
	client := &http.Client{Timeout: hostPreflightTimeout}
	get := func(path, key string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+path, nil)
		if err != nil {
			return 0, nil, err
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return res.StatusCode, body, err
	}
	status, body, err := get(protocol.PathCard, "")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &exitError{code: 1, err: fmt.Errorf("nothing answers at %s (%s): start the connector or correct the Base URL", base, scrub(rootErr(err)))}
	}
	var card struct {
		ID string `json:"connector_card_id"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &card) != nil || card.ID == "" {
		return &exitError{code: 1, err: fmt.Errorf("%s is not a connector's Base URL (GET %s answered HTTP %d without a Connector Card): use the connector's root, such as http://127.0.0.1:8080, not a page under it", base, protocol.PathCard, status)}
	}
	status, body, err = get(protocol.PathHealth, apiKey)
	if err != nil || (status != http.StatusUnauthorized && status != http.StatusForbidden) {
		return nil // the rest is admission's business
	}
	said := scrub(serverMessage(body))
	if apiKey == "" {
		return &exitError{code: 1, err: fmt.Errorf("the connector at %s requires an API key (GET %s answered HTTP %d: %s): pass it with --api-key or XCONN_API_KEY", base, protocol.PathHealth, status, said)}
	}
	return &exitError{code: 1, err: fmt.Errorf("the connector at %s refused the API key (GET %s answered HTTP %d: %s): check --api-key or XCONN_API_KEY", base, protocol.PathHealth, status, said)}
}

// serverMessage is what a Connector said in an error body: the message
// (and code) of {"error": code, "message": text}, else the body's first
// line, at most 200 bytes.
func serverMessage(body []byte) string {
	var e struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		if code, ok := e.Error.(string); ok && code != "" {
			return fmt.Sprintf("%q (%s)", e.Message, code)
		}
		return fmt.Sprintf("%q", e.Message)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	if line == "" {
		return "no message"
	}
	return fmt.Sprintf("%q", line)
}

// rootErr is the innermost error text (without "Get url:" wrapping).
func rootErr(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// checkNotConnectorURL is xconn check's guard against a wrong Base URL: a
// server that answers GET /connector-card.json with 404 (a page under the
// connector's root, another service) gets one sentence and exit 1 instead
// of a report that fails every requirement. Anything else is the
// conformance run's business (it diagnoses silence and a refused key).
func checkNotConnectorURL(ctx context.Context, baseURL string) error {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil // conformance.Check reports it as a usage error
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+protocol.PathCard, nil)
	if err != nil {
		return nil
	}
	res, err := (&http.Client{Timeout: hostPreflightTimeout}).Do(req)
	if err != nil {
		return nil
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("%s is not a connector's Base URL (GET %s answered HTTP 404): use the connector's root, such as http://127.0.0.1:8080, not a page under it",
		strings.TrimSuffix(u.Redacted(), "/"), protocol.PathCard)}
}
