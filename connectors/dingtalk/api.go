package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
)

// APIError is a DingTalk Open Platform failure: the HTTP status and the
// new API's code and message, or the old API's errcode and errmsg (never
// a token or secret).
type APIError struct {
	Op     string
	Status int
	// Code is the new API's string code ("InvalidAuthentication", ...).
	Code string
	// ErrCode is the old API's errcode (media upload, session webhook).
	ErrCode int
	Msg     string
}

func (e *APIError) Error() string {
	if e.Code == "" && e.ErrCode != 0 {
		return fmt.Sprintf("dingtalk %s: errcode %d: %s", e.Op, e.ErrCode, e.Msg)
	}
	return fmt.Sprintf("dingtalk %s: HTTP %d %s: %s", e.Op, e.Status, e.Code, e.Msg)
}

// Temporary reports a failure worth a retry: HTTP 429 and 5xx, the new
// API's throttling codes and the old API's "system busy" (-1) and rate
// limit errcodes (fact sheet §7).
func (e *APIError) Temporary() bool {
	if e.Status == http.StatusTooManyRequests || e.Status >= 500 {
		return true
	}
	c := strings.ToLower(e.Code)
	if strings.Contains(c, "throttl") || strings.Contains(c, "qpslimit") || strings.Contains(c, "flowcontrol") ||
		strings.Contains(c, "serviceunavailable") || strings.Contains(c, "systembusy") {
		return true
	}
	switch e.ErrCode {
	case -1, 88, 90018, 90002, 130101, 410100:
		return true
	}
	return false
}

// rateLimited reports a refusal for frequency (HTTP 429, throttling
// codes, the old API's rate limit errcodes).
func (e *APIError) rateLimited() bool {
	c := strings.ToLower(e.Code)
	return e.Status == http.StatusTooManyRequests || strings.Contains(c, "throttl") || strings.Contains(c, "qpslimit") ||
		strings.Contains(c, "flowcontrol") || e.ErrCode == 90018 || e.ErrCode == 130101 || e.ErrCode == 410100
}

// tokenInvalid reports a refused access token: the call is retried once
// with a fresh one (HTTP 401 or InvalidAuthentication on the new API,
// 40014/42001 on the old, §2).
func (e *APIError) tokenInvalid() bool {
	return e.Status == http.StatusUnauthorized || e.Code == "InvalidAuthentication" || e.ErrCode == 40014 || e.ErrCode == 42001
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
	ClientID, Secret, RobotCode string
}

type cachedToken struct {
	token   string
	expires time.Time
}

// openAPI is the REST client of both hosts over the HTTP client of the
// SDK's TargetAPI, shared by every app: an access token cache per
// Client ID (bounded by maxTokens), the refused-token retry and the rate
// limit wait.
type openAPI struct {
	base    string // api.dingtalk.com
	oapi    string // oapi.dingtalk.com
	hc      *http.Client
	timeout time.Duration
	rl      connector.RateLimit
	// redact adds a fetched token to the server's redaction set.
	redact func(values ...string)

	mu     sync.Mutex
	tokens map[string]cachedToken
}

// maxTokens bounds the cached access tokens (one per app).
const maxTokens = 4096

// tokenMargin is how long before its expiry a cached token is replaced:
// DingTalk's document advises caching for somewhat less than 7200 s (§2).
const tokenMargin = 5 * time.Minute

// accessToken returns a cached access token of app c, or fetches one
// (fresh skips the cache).
func (a *openAPI) accessToken(ctx context.Context, c cred, fresh bool) (string, error) {
	now := time.Now()
	if !fresh {
		a.mu.Lock()
		t, ok := a.tokens[c.ClientID]
		a.mu.Unlock()
		if ok && now.Before(t.expires) {
			return t.token, nil
		}
	}
	body, _ := json.Marshal(map[string]string{"appKey": c.ClientID, "appSecret": c.Secret})
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int    `json:"expireIn"`
		Code        string `json:"code"`
		Message     string `json:"message"`
	}
	status, err := a.raw(ctx, http.MethodPost, a.base+"/v1.0/oauth2/accessToken", "application/json", body, "", &out)
	if err != nil {
		return "", fmt.Errorf("dingtalk access token: %w", err)
	}
	if status != http.StatusOK || out.AccessToken == "" {
		return "", &APIError{Op: "access token", Status: status, Code: out.Code, Msg: out.Message}
	}
	if a.redact != nil {
		a.redact(out.AccessToken)
	}
	ttl := time.Duration(out.ExpireIn)*time.Second - tokenMargin
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
	a.tokens[c.ClientID] = cachedToken{token: out.AccessToken, expires: now.Add(ttl)}
	a.mu.Unlock()
	return out.AccessToken, nil
}

// forget drops app's cached token (logout, a refused token).
func (a *openAPI) forget(clientID string) {
	a.mu.Lock()
	delete(a.tokens, clientID)
	a.mu.Unlock()
}

// raw sends one request to u and decodes a JSON answer into out; token,
// when set, goes in x-acs-dingtalk-access-token.
func (a *openAPI) raw(ctx context.Context, method, u, ctype string, body []byte, token string, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, scrubURL(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("x-acs-dingtalk-access-token", token)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return 0, scrubURL(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, scrubURL(err)
	}
	if out != nil && json.Unmarshal(raw, out) != nil && res.StatusCode == http.StatusOK {
		return res.StatusCode, errors.New("answer is not JSON")
	}
	return res.StatusCode, nil
}

// scrubURL drops the request URL from a transport error: an old API URL
// carries the access token, a session webhook its session.
func scrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("dingtalk request: %w", ue.Err)
	}
	return err
}

// call runs an authenticated new-API call (api.dingtalk.com): a refused
// token is retried once with a fresh one; a frequency limit is a
// *connector.RateLimitError, waited out by rl when short enough.
func (a *openAPI) call(ctx context.Context, c cred, op, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return a.rl.Do(ctx, func(ctx context.Context) error {
		for fresh := false; ; fresh = true {
			tok, err := a.accessToken(ctx, c, fresh)
			if err != nil {
				return err
			}
			var raw json.RawMessage
			status, err := a.raw(ctx, method, a.base+path, "application/json", body, tok, &raw)
			if err != nil {
				return fmt.Errorf("dingtalk %s: %w", op, err)
			}
			if status == http.StatusOK {
				if out != nil && len(raw) > 0 {
					if err := json.Unmarshal(raw, out); err != nil {
						return fmt.Errorf("dingtalk %s: decode: %w", op, err)
					}
				}
				return nil
			}
			var e struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(raw, &e)
			ae := &APIError{Op: op, Status: status, Code: e.Code, Msg: e.Message}
			switch {
			case ae.tokenInvalid() && !fresh:
				a.forget(c.ClientID)
				continue
			case ae.rateLimited():
				return &connector.RateLimitError{Err: ae}
			}
			return ae
		}
	})
}

// oapiResult is the old API's envelope.
type oapiResult struct {
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
	MediaID string `json:"media_id"`
}

// upload sends a file to oapi /media/upload (§6.4) and returns its
// media_id. typ is image, voice, video or file.
func (a *openAPI) upload(ctx context.Context, c cred, typ, name string, open func() (io.ReadCloser, error)) (string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreateFormFile("media", name)
	if err != nil {
		return "", err
	}
	r, err := open()
	if err != nil {
		return "", fmt.Errorf("dingtalk: open file: %w", err)
	}
	_, err = io.Copy(part, r)
	r.Close()
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", fmt.Errorf("dingtalk: read file: %w", err)
	}
	body := buf.Bytes()
	var mediaID string
	err = a.rl.Do(ctx, func(ctx context.Context) error {
		for fresh := false; ; fresh = true {
			tok, err := a.accessToken(ctx, c, fresh)
			if err != nil {
				return err
			}
			var out oapiResult
			q := url.Values{"access_token": {tok}, "type": {typ}}
			status, err := a.raw(ctx, http.MethodPost, a.oapi+"/media/upload?"+q.Encode(), mw.FormDataContentType(), body, "", &out)
			if err != nil {
				return fmt.Errorf("dingtalk upload: %w", err)
			}
			if status == http.StatusOK && out.ErrCode == 0 && out.MediaID != "" {
				mediaID = out.MediaID
				return nil
			}
			ae := &APIError{Op: "upload", Status: status, ErrCode: out.ErrCode, Msg: out.ErrMsg}
			switch {
			case ae.tokenInvalid() && !fresh:
				a.forget(c.ClientID)
				continue
			case ae.rateLimited():
				return &connector.RateLimitError{Err: ae}
			}
			return ae
		}
	})
	return mediaID, err
}

// sessionSend posts a message to a session webhook (§6.1): the old API's
// envelope, no access token.
func (a *openAPI) sessionSend(ctx context.Context, webhook string, msg any) error {
	body, _ := json.Marshal(msg)
	var out oapiResult
	status, err := a.raw(ctx, http.MethodPost, webhook, "application/json", body, "", &out)
	if err != nil {
		return fmt.Errorf("dingtalk session webhook: %w", err)
	}
	if status != http.StatusOK || out.ErrCode != 0 {
		ae := &APIError{Op: "session webhook", Status: status, ErrCode: out.ErrCode, Msg: out.ErrMsg}
		if ae.rateLimited() {
			return &connector.RateLimitError{Err: ae}
		}
		return ae
	}
	return nil
}

// download fetches a user file by its downloadCode (§6.3): the robot API
// gives a short-lived URL, which is read up to limit bytes.
func (a *openAPI) download(ctx context.Context, c cred, code string, limit int64) ([]byte, error) {
	var out struct {
		DownloadURL string `json:"downloadUrl"`
	}
	if err := a.call(ctx, c, "file download", http.MethodPost, "/v1.0/robot/messageFiles/download",
		map[string]string{"downloadCode": code, "robotCode": c.RobotCode}, &out); err != nil {
		return nil, err
	}
	u, err := url.Parse(out.DownloadURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, &APIError{Op: "file download", Status: http.StatusBadGateway, Msg: "no download URL"}
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, scrubURL(err)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dingtalk file download: %w", scrubURL(err))
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, &APIError{Op: "file download", Status: res.StatusCode, Msg: "download URL refused"}
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("dingtalk file download: %w", scrubURL(err))
	}
	if int64(len(data)) > limit {
		return nil, &APIError{Op: "file download", Status: http.StatusRequestEntityTooLarge, Msg: "file too large"}
	}
	return data, nil
}
