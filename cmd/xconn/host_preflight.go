package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/xconn/xconn/protocol"
)

// preflightTimeout bounds each request of connectorPreflight.
const preflightTimeout = 10 * time.Second

// connectorPreflight recognises the user's own mistakes before a command
// that reaches a Connector Server does anything else ("xconn host", "xconn
// check"), each in one sentence: a BASE_URL that is not an absolute http(s)
// URL is a usage error (exit 2); nothing answers at it, it is not a
// Connector Server's root (a page under it, another service), or the
// Connector refuses the API key (with the Connector's own message) exit 1;
// a flow (--auth-flow, "" for none) the Card does not declare is a usage
// error that lists the flows it has. scrub removes secrets from what the
// Connector said.
func connectorPreflight(ctx context.Context, baseURL, apiKey, flow string, scrub func(string) string) error {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(u.Redacted(), "/")
	client := &http.Client{Timeout: preflightTimeout}
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
		ID    string `json:"connector_card_id"`
		Flows []struct {
			ID string `json:"id"`
		} `json:"auth_flows"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &card) != nil || card.ID == "" {
		return &exitError{code: 1, err: fmt.Errorf("%s is not a connector's Base URL (GET %s answered HTTP %d without a Connector Card): use the connector's root, such as http://127.0.0.1:8080, not a page under it", base, protocol.PathCard, status)}
	}
	if flow != "" {
		var ids []string
		for _, fl := range card.Flows {
			if fl.ID == flow {
				ids = nil
				break
			}
			ids = append(ids, fl.ID)
		}
		switch {
		case len(card.Flows) == 0:
			return usageError(fmt.Errorf("unknown --auth-flow %q: the Card of %s declares no auth flows", flow, card.ID))
		case ids != nil:
			return usageError(fmt.Errorf("unknown --auth-flow %q: the Card of %s offers %s", flow, card.ID, strings.Join(ids, ", ")))
		}
	}
	status, body, err = get(protocol.PathHealth, apiKey)
	if err != nil || (status != http.StatusUnauthorized && status != http.StatusForbidden) {
		return nil // the rest is admission's (or the conformance run's) business
	}
	said := scrub(serverMessage(body))
	if apiKey == "" {
		return &exitError{code: 1, err: fmt.Errorf("the connector at %s requires an API key (GET %s answered HTTP %d: %s): pass it with --api-key-file, --api-key or XCONN_API_KEY", base, protocol.PathHealth, status, said)}
	}
	return &exitError{code: 1, err: fmt.Errorf("the connector at %s refused the API key (GET %s answered HTTP %d: %s): check --api-key-file, --api-key or XCONN_API_KEY", base, protocol.PathHealth, status, said)}
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
