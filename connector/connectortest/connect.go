package connectortest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// MaxCardBytes bounds the Card [Connect] reads.
const MaxCardBytes = 1 << 20

// Connect does what a host does before it opens channels: it reads the Card
// from /connector-card.json under baseURL, dials /ws with the optional API
// key and sends connector.hello with the Card's connector_card_id, this
// protocol version and the Card's profiles. It returns the client, the
// hello ack (whose ConnectorID a later hello may reuse). A refused hello is
// a *protocol.Error. The caller closes the client.
func Connect(ctx context.Context, baseURL, apiKey string) (*Client, *protocol.HelloAckPayload, error) {
	card, err := FetchCard(ctx, baseURL, apiKey)
	if err != nil {
		return nil, nil, err
	}
	c, err := Dial(ctx, baseURL, apiKey)
	if err != nil {
		return nil, nil, err
	}
	ack, err := c.Hello(ctx, protocol.HelloPayload{ConnectorCardID: card.ConnectorCardID,
		ProtocolVersion: protocol.ProtocolVersion, SupportedProfiles: card.Supports.Profiles})
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, ack, nil
}

// FetchCard reads and parses the Card at baseURL + /connector-card.json
// (sending the API key when one is given). It does not validate the Card:
// use protocol.ValidateCard, or the conformance suite, for that.
func FetchCard(ctx context.Context, baseURL, apiKey string) (*protocol.Card, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+protocol.PathCard, nil)
	if err != nil {
		return nil, fmt.Errorf("connectortest: card: %w", err)
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("connectortest: card: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCardBytes))
	if err != nil {
		return nil, fmt.Errorf("connectortest: card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("connectortest: card: HTTP %d", resp.StatusCode)
	}
	card, err := protocol.ParseCard(body)
	if err != nil {
		return nil, fmt.Errorf("connectortest: card: %w", err)
	}
	return card, nil
}
