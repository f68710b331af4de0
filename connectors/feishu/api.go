package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
)

// APIError is a Feishu Open Platform failure: the HTTP status and the
// envelope's code and msg (never a token or secret).
type APIError struct {
	Op     string
	Status int
	Code   int
	Msg    string
	// RetryAfter is x-ogw-ratelimit-reset of a 429, when given.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("feishu %s: HTTP %d code %d: %s", e.Op, e.Status, e.Code, e.Msg)
}

// Temporary reports a failure worth a retry: frequency limits (HTTP 429,
// 99991400, 230020), 5xx and the long connection's busy codes.
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 ||
		e.Code == 99991400 || e.Code == 230020 || e.Code == 1 || e.Code == 1000040343
}

// tokenInvalid reports the 99991663-class codes: the access token is
// invalid (§1, §7); the call is retried once with a fresh token.
func tokenInvalid(code int) bool {
	switch code {
	case 99991663, 99991664, 99991671, 99991661:
		return true
	}
	return false
}

// isTemporary reports a transient failure: a temporary APIError or a
// network error.
func isTemporary(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// cred is one app's credentials.
type cred struct {
	AppID, Secret string
}

type cachedToken struct {
	token   string
	expires time.Time
}

// openAPI is the REST client of the Open Platform over the HTTP client of
// the SDK's TargetAPI, shared by every app: a tenant token cache per
// app_id (bounded by maxTokens), the 99991663 retry and the 429 wait.
type openAPI struct {
	base    string
	hc      *http.Client
	timeout time.Duration
	rl      connector.RateLimit

	// redact adds a fetched tenant token to the server's redaction set,
	// so that it is scrubbed from logs, acks and results should any path
	// ever carry it (the SDK's set is bounded).
	redact func(values ...string)

	mu     sync.Mutex
	tokens map[string]cachedToken
}

// maxTokens bounds the cached tenant tokens (one per app).
const maxTokens = 4096

// tokenMargin is how long before its expire a cached token is replaced
// (the SDK's expiryDelta, §2).
const tokenMargin = 3 * time.Minute

// tenantToken returns a cached tenant token of app c, or fetches one
// (fresh skips the cache).
func (a *openAPI) tenantToken(ctx context.Context, c cred, fresh bool) (string, error) {
	now := time.Now()
	if !fresh {
		a.mu.Lock()
		t, ok := a.tokens[c.AppID]
		a.mu.Unlock()
		if ok && now.Before(t.expires) {
			return t.token, nil
		}
	}
	body, _ := json.Marshal(map[string]string{"app_id": c.AppID, "app_secret": c.Secret})
	var out struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	status, _, err := a.raw(ctx, http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", "application/json; charset=utf-8", body, "", &out)
	if err != nil {
		return "", fmt.Errorf("feishu tenant token: %w", err)
	}
	if status != http.StatusOK || out.Code != 0 || out.Token == "" {
		return "", &APIError{Op: "tenant token", Status: status, Code: out.Code, Msg: out.Msg}
	}
	if a.redact != nil {
		a.redact(out.Token)
	}
	ttl := time.Duration(out.Expire)*time.Second - tokenMargin
	if ttl <= 0 {
		ttl = time.Minute
	}
	a.mu.Lock()
	if len(a.tokens) >= maxTokens {
		for k, t := range a.tokens {
			if now.After(t.expires) || len(a.tokens) >= maxTokens {
				delete(a.tokens, k)
			}
		}
	}
	a.tokens[c.AppID] = cachedToken{token: out.Token, expires: now.Add(ttl)}
	a.mu.Unlock()
	return out.Token, nil
}

// forget drops app's cached token (logout, a refused token).
func (a *openAPI) forget(appID string) {
	a.mu.Lock()
	delete(a.tokens, appID)
	a.mu.Unlock()
}

// raw sends one request and decodes a JSON answer into out; it returns
// the status and headers. A non-JSON 200 body is returned by download.
func (a *openAPI) raw(ctx context.Context, method, path, ctype string, body []byte, token string, out any) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return 0, nil, scrubURL(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, res.Header, err
	}
	if out != nil && json.Unmarshal(raw, out) != nil && res.StatusCode == http.StatusOK {
		return res.StatusCode, res.Header, fmt.Errorf("feishu %s %s: answer is not JSON", method, path)
	}
	return res.StatusCode, res.Header, nil
}

// scrubURL drops the request URL from a transport error (it carries no
// secret, but keeps log lines short and stable).
func scrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("feishu request: %w", ue.Err)
	}
	return err
}

// envelope is the common answer {"code","msg","data"} (§1).
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// call runs an authenticated API call: a 99991663-class answer is
// retried once with a fresh token; a frequency limit (HTTP 429 or
// 99991400) is a *connector.RateLimitError with x-ogw-ratelimit-reset,
// waited out by rl when it is short enough. body builds the request body
// each attempt.
func (a *openAPI) call(ctx context.Context, c cred, op, method, path string, body func() ([]byte, string, error), out any) error {
	return a.rl.Do(ctx, func(ctx context.Context) error {
		return a.callOnce(ctx, c, op, method, path, body, out)
	})
}

func (a *openAPI) callOnce(ctx context.Context, c cred, op, method, path string, body func() ([]byte, string, error), out any) error {
	for fresh := false; ; fresh = true {
		tok, err := a.tenantToken(ctx, c, fresh)
		if err != nil {
			return err
		}
		var b []byte
		ctype := ""
		if body != nil {
			if b, ctype, err = body(); err != nil {
				return err
			}
		}
		var env envelope
		status, h, err := a.raw(ctx, method, path, ctype, b, tok, &env)
		if err != nil {
			return fmt.Errorf("feishu %s: %w", op, err)
		}
		if status == http.StatusOK && env.Code == 0 {
			if out != nil && len(env.Data) > 0 {
				if err := json.Unmarshal(env.Data, out); err != nil {
					return fmt.Errorf("feishu %s: decode: %w", op, err)
				}
			}
			return nil
		}
		ae := &APIError{Op: op, Status: status, Code: env.Code, Msg: env.Msg}
		ae.RetryAfter, _ = connector.ParseRetryAfter(h.Get("x-ogw-ratelimit-reset"), time.Now())
		switch {
		case tokenInvalid(env.Code) && !fresh:
			a.forget(c.AppID)
			continue
		case status == http.StatusTooManyRequests || env.Code == 99991400:
			return &connector.RateLimitError{RetryAfter: ae.RetryAfter, Err: ae}
		}
		return ae
	}
}

// jsonBody encodes v as a JSON request body.
func jsonBody(v any) func() ([]byte, string, error) {
	return func() ([]byte, string, error) {
		b, err := json.Marshal(v)
		return b, "application/json; charset=utf-8", err
	}
}

// multipartBody builds a multipart form with fields and one file.
func multipartBody(fields [][2]string, field, name string, open func() (io.ReadCloser, error)) func() ([]byte, string, error) {
	return func() ([]byte, string, error) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range fields {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				return nil, "", err
			}
		}
		part, err := mw.CreateFormFile(field, name)
		if err != nil {
			return nil, "", err
		}
		r, err := open()
		if err != nil {
			return nil, "", fmt.Errorf("feishu: open file: %w", err)
		}
		_, err = io.Copy(part, r)
		r.Close()
		if err != nil {
			return nil, "", fmt.Errorf("feishu: read file: %w", err)
		}
		if err := mw.Close(); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), mw.FormDataContentType(), nil
	}
}

// sentMessage is the part of the Message answer the connector keeps.
type sentMessage struct {
	MessageID string `json:"message_id"`
	ChatID    string `json:"chat_id"`
}

// create sends a message to a chat (§6.1); uuid makes it idempotent
// for an hour.
func (a *openAPI) create(ctx context.Context, c cred, chatID, msgType, content, uuid string) (sentMessage, error) {
	var m sentMessage
	err := a.call(ctx, c, "create message", http.MethodPost, "/open-apis/im/v1/messages?receive_id_type=chat_id",
		jsonBody(map[string]string{"receive_id": chatID, "msg_type": msgType, "content": content, "uuid": uuid}), &m)
	return m, err
}

// reply answers message id (§6.2).
func (a *openAPI) reply(ctx context.Context, c cred, id, msgType, content, uuid string) (sentMessage, error) {
	var m sentMessage
	err := a.call(ctx, c, "reply message", http.MethodPost, "/open-apis/im/v1/messages/"+url.PathEscape(id)+"/reply",
		jsonBody(map[string]any{"msg_type": msgType, "content": content, "uuid": uuid, "reply_in_thread": false}), &m)
	return m, err
}

// update edits a text message (§6.3; at most 20 edits).
func (a *openAPI) update(ctx context.Context, c cred, id, text string) error {
	return a.call(ctx, c, "edit message", http.MethodPut, "/open-apis/im/v1/messages/"+url.PathEscape(id),
		jsonBody(map[string]string{"msg_type": "text", "content": textContent(text)}), nil)
}

// uploadImage uploads an image for sending (§6.5) and returns its key.
func (a *openAPI) uploadImage(ctx context.Context, c cred, name string, open func() (io.ReadCloser, error)) (string, error) {
	var out struct {
		ImageKey string `json:"image_key"`
	}
	err := a.call(ctx, c, "upload image", http.MethodPost, "/open-apis/im/v1/images",
		multipartBody([][2]string{{"image_type", "message"}}, "image", name, open), &out)
	return out.ImageKey, err
}

// fileType is the file_type of an upload (§6.6) by extension.
func fileType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".opus":
		return "opus"
	case ".mp4":
		return "mp4"
	case ".pdf":
		return "pdf"
	case ".doc", ".docx":
		return "doc"
	case ".xls", ".xlsx":
		return "xls"
	case ".ppt", ".pptx":
		return "ppt"
	}
	return "stream"
}

// uploadFile uploads a file (§6.6) and returns its key.
func (a *openAPI) uploadFile(ctx context.Context, c cred, fileType, name string, open func() (io.ReadCloser, error)) (string, error) {
	var out struct {
		FileKey string `json:"file_key"`
	}
	err := a.call(ctx, c, "upload file", http.MethodPost, "/open-apis/im/v1/files",
		multipartBody([][2]string{{"file_type", fileType}, {"file_name", name}}, "file", name, open), &out)
	return out.FileKey, err
}

// download fetches a resource of a user message (§6.7): raw bytes on
// 200, a JSON envelope otherwise. limit bounds the size.
func (a *openAPI) download(ctx context.Context, c cred, msgID, key, typ string, limit int64) ([]byte, string, error) {
	for attempt := 0; ; attempt++ {
		tok, err := a.tenantToken(ctx, c, attempt > 0)
		if err != nil {
			return nil, "", err
		}
		dctx, cancel := context.WithTimeout(ctx, a.timeout)
		req, err := http.NewRequestWithContext(dctx, http.MethodGet,
			a.base+"/open-apis/im/v1/messages/"+url.PathEscape(msgID)+"/resources/"+url.PathEscape(key)+"?type="+typ, nil)
		if err != nil {
			cancel()
			return nil, "", err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := a.hc.Do(req)
		if err != nil {
			cancel()
			return nil, "", fmt.Errorf("feishu download: %w", scrubURL(err))
		}
		data, rerr := io.ReadAll(io.LimitReader(res.Body, limit+1))
		res.Body.Close()
		cancel()
		if rerr != nil {
			return nil, "", fmt.Errorf("feishu download: %w", rerr)
		}
		ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
		if res.StatusCode == http.StatusOK && ct != "application/json" {
			if int64(len(data)) > limit {
				return nil, "", &APIError{Op: "download", Status: http.StatusRequestEntityTooLarge, Msg: "file too large"}
			}
			_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
			return data, params["filename"], nil
		}
		var env envelope
		_ = json.Unmarshal(data, &env)
		if tokenInvalid(env.Code) && attempt == 0 {
			a.forget(c.AppID)
			continue
		}
		return nil, "", &APIError{Op: "download", Status: res.StatusCode, Code: env.Code, Msg: env.Msg}
	}
}

// textContent is the content string of a text message.
func textContent(text string) string {
	b, _ := json.Marshal(map[string]string{"text": text})
	return string(b)
}
