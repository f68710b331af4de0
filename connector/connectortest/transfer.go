package connectortest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/xconn/xconn/protocol"
)

// MaxTransferBytes bounds what [Client.Upload] sends and [Client.Download]
// reads in one call.
const MaxTransferBytes = 64 << 20

// Upload puts a file on the connector's transfer plane for channel, as a
// host does before it sends a final that carries the file: POST
// /files/uploads with the system API key, the channel header and a
// multipart "file" part named filename of type mimeType. It returns the
// connector's answer, whose FileRef a [protocol.ChatFile] of the final (or a
// tool argument) names. A refusal is an error with the HTTP status and the
// connector's error message.
func (c *Client) Upload(ctx context.Context, channel, filename, mimeType string, data []byte) (*protocol.UploadResponse, error) {
	if len(data) > MaxTransferBytes {
		return nil, fmt.Errorf("connectortest: upload of %d bytes exceeds MaxTransferBytes", len(data))
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", mimeType)
	part, err := mw.CreatePart(h)
	if err == nil {
		_, err = part.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("connectortest: upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+protocol.PathFileUploads, &body)
	if err != nil {
		return nil, fmt.Errorf("connectortest: upload: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(protocol.HeaderChannelID, channel)
	raw, err := c.do(req, func(status int) bool { return status/100 == 2 })
	if err != nil {
		return nil, fmt.Errorf("connectortest: upload %s: %w", filename, err)
	}
	var up protocol.UploadResponse
	if err := json.Unmarshal(raw, &up); err != nil || up.FileRef == "" {
		return nil, fmt.Errorf("connectortest: upload %s: no file_ref in %.200s", filename, raw)
	}
	return &up, nil
}

// Download fetches a download_url the connector handed out (in an inbound
// chat.message or a tool result), relative to its Base URL or absolute, as
// a host does, with the system API key, and returns the body. A status
// other than 200 is an error.
func (c *Client) Download(ctx context.Context, url string) ([]byte, error) {
	if strings.HasPrefix(url, "/") {
		url = c.baseURL + url
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("connectortest: download: %w", err)
	}
	b, err := c.do(req, func(status int) bool { return status == http.StatusOK })
	if err != nil {
		return nil, fmt.Errorf("connectortest: download: %w", err)
	}
	return b, nil
}

// do sends req with the API key and returns the body of an answer whose
// status ok accepts.
func (c *Client) do(req *http.Request, ok func(status int) bool) ([]byte, error) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxTransferBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxTransferBytes {
		return nil, fmt.Errorf("answer exceeds MaxTransferBytes")
	}
	if !ok(res.StatusCode) {
		return nil, fmt.Errorf("HTTP %d: %.200s", res.StatusCode, strings.TrimSpace(string(b)))
	}
	return b, nil
}
