package wecom

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
	"strconv"
	"sync"
	"time"

	"github.com/xconn/xconn/connector"
)

// WeCom's server API ("服务端API"): every call carries access_token in the
// query and answers {"errcode","errmsg",...} with HTTP 200, errors
// included. The access token of an application comes from
// GET /cgi-bin/gettoken?corpid&corpsecret, lasts expires_in seconds (7200)
// and is cached per application until shortly before that; 40014 and 42001
// make the call fetch a fresh one and try once more.

// WeCom errcodes the connector acts on (全局错误码).
const (
	codeBusy          = -1    // system busy: retry
	codeInvalidSecret = 40001 // invalid secret
	codeInvalidToken  = 40014 // invalid access_token
	codeTokenMissing  = 41001 // access_token missing
	codeTokenExpired  = 42001 // access_token expired
	codeFreqLimit     = 45009 // API frequency limit
	codeIPNotAllowed  = 60020 // not a trusted IP of the application
	codeNoReceiver    = 81013 // user & party & tag all invalid
)

// APIError is a WeCom server API failure: the HTTP status (200 for an
// errcode answer) and the errcode and errmsg (never a token or secret).
type APIError struct {
	Op     string
	Status int
	Code   int
	Msg    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("wecom %s: HTTP %d errcode %d: %s", e.Op, e.Status, e.Code, e.Msg)
}

// Temporary reports a failure worth a retry: system busy (-1), the
// frequency limit (45009), HTTP 429 and 5xx.
func (e *APIError) Temporary() bool {
	return e.Code == codeBusy || e.Code == codeFreqLimit || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

func tokenInvalid(code int) bool {
	return code == codeInvalidToken || code == codeTokenExpired || code == codeTokenMissing
}

// isTemporary reports a transient failure: a temporary APIError, a rate
// limit or a network error.
func isTemporary(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var rl *connector.RateLimitError
	var ne net.Error
	return errors.As(err, &rl) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// cred is one application's credentials.
type cred struct {
	CorpID, Secret string
}

func (c cred) cacheKey() string { return c.CorpID + "\x00" + c.Secret }

type cachedToken struct {
	token   string
	expires time.Time
}

// serverAPI is the client of WeCom's server API over the SDK's TargetAPI
// client, shared by every application: an access token cache per
// application (bounded by maxTokens), the 40014/42001 retry and the 45009
// wait.
type serverAPI struct {
	base    string
	hc      *http.Client
	timeout time.Duration
	rl      connector.RateLimit
	// redact adds each fetched access token to the server's redaction set.
	redact func(values ...string)

	mu     sync.Mutex
	tokens map[string]cachedToken
}

const (
	// maxTokens bounds the cached access tokens (one per application).
	maxTokens = 4096
	// tokenMargin is how long before expires_in a cached token is
	// replaced.
	tokenMargin = 5 * time.Minute
	// maxAnswer bounds a JSON answer.
	maxAnswer = 1 << 20
)

// token returns a cached access token of application c, or fetches one
// (fresh skips the cache).
func (a *serverAPI) token(ctx context.Context, c cred, fresh bool) (string, error) {
	now := time.Now()
	if !fresh {
		a.mu.Lock()
		t, ok := a.tokens[c.cacheKey()]
		a.mu.Unlock()
		if ok && now.Before(t.expires) {
			return t.token, nil
		}
	}
	var out struct {
		Code      int    `json:"errcode"`
		Msg       string `json:"errmsg"`
		Token     string `json:"access_token"`
		ExpiresIn int    `json:"expires_in"`
	}
	q := url.Values{"corpid": {c.CorpID}, "corpsecret": {c.Secret}}
	status, err := a.raw(ctx, http.MethodGet, "/cgi-bin/gettoken?"+q.Encode(), "", nil, &out)
	if err != nil {
		return "", fmt.Errorf("wecom gettoken: %w", err)
	}
	if status != http.StatusOK || out.Code != 0 || out.Token == "" {
		return "", &APIError{Op: "gettoken", Status: status, Code: out.Code, Msg: out.Msg}
	}
	if a.redact != nil {
		a.redact(out.Token)
	}
	ttl := time.Duration(out.ExpiresIn)*time.Second - tokenMargin
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
	a.tokens[c.cacheKey()] = cachedToken{token: out.Token, expires: now.Add(ttl)}
	a.mu.Unlock()
	return out.Token, nil
}

// forget drops an application's cached token.
func (a *serverAPI) forget(c cred) {
	a.mu.Lock()
	delete(a.tokens, c.cacheKey())
	a.mu.Unlock()
}

// raw sends one request to pathQuery and decodes a JSON answer into out.
// The URL (which holds the secret or the token) never reaches an error.
func (a *serverAPI) raw(ctx context.Context, method, pathQuery, ctype string, body []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+pathQuery, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("bad request URL")
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return 0, scrubURL(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return res.StatusCode, scrubURL(err)
	}
	if json.Unmarshal(raw, out) != nil && res.StatusCode == http.StatusOK {
		return res.StatusCode, errors.New("answer is not JSON")
	}
	return res.StatusCode, nil
}

// scrubURL keeps only the cause of a transport error: its URL carries
// the corpsecret or the access token.
func scrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("wecom request: %w", ue.Err)
	}
	return err
}

// envelope is the common part of every answer.
type envelope struct {
	Code int    `json:"errcode"`
	Msg  string `json:"errmsg"`
}

// call runs an authenticated call: path gets access_token in its query;
// 40014/42001 are retried once with a fresh token; 45009 is a
// *connector.RateLimitError waited out by rl. body builds the request
// body each attempt; out receives the whole answer.
func (a *serverAPI) call(ctx context.Context, c cred, op, method, path string, query url.Values, body func() ([]byte, string, error), out func([]byte) error) error {
	return a.rl.Do(ctx, func(ctx context.Context) error {
		return a.callOnce(ctx, c, op, method, path, query, body, out)
	})
}

func (a *serverAPI) callOnce(ctx context.Context, c cred, op, method, path string, query url.Values, body func() ([]byte, string, error), out func([]byte) error) error {
	for fresh := false; ; fresh = true {
		tok, err := a.token(ctx, c, fresh)
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
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		q.Set("access_token", tok)
		var raw json.RawMessage
		status, err := a.raw(ctx, method, path+"?"+q.Encode(), ctype, b, &raw)
		if err != nil {
			return fmt.Errorf("wecom %s: %w", op, err)
		}
		var env envelope
		_ = json.Unmarshal(raw, &env)
		if status == http.StatusOK && env.Code == 0 {
			if out != nil {
				if err := out(raw); err != nil {
					return fmt.Errorf("wecom %s: decode: %w", op, err)
				}
			}
			return nil
		}
		ae := &APIError{Op: op, Status: status, Code: env.Code, Msg: env.Msg}
		switch {
		case tokenInvalid(env.Code) && !fresh:
			a.forget(c)
			continue
		case env.Code == codeFreqLimit || status == http.StatusTooManyRequests:
			return &connector.RateLimitError{Err: ae}
		}
		return ae
	}
}

func jsonBody(v any) func() ([]byte, string, error) {
	return func() ([]byte, string, error) {
		b, err := json.Marshal(v)
		return b, "application/json; charset=utf-8", err
	}
}

// sendAnswer is message/send's answer.
type sendAnswer struct {
	MsgID       string `json:"msgid"`
	InvalidUser string `json:"invaliduser"`
}

// send posts one application message (发送应用消息): msgType text,
// markdown, image or file, with its member (content or media_id).
func (a *serverAPI) send(ctx context.Context, c cred, agentID int, toUser, msgType string, member any) (string, error) {
	var ans sendAnswer
	err := a.call(ctx, c, "message/send", http.MethodPost, "/cgi-bin/message/send", nil,
		jsonBody(map[string]any{"touser": toUser, "msgtype": msgType, "agentid": agentID, msgType: member}),
		func(raw []byte) error { return json.Unmarshal(raw, &ans) })
	if err == nil && ans.InvalidUser != "" {
		err = &APIError{Op: "message/send", Status: http.StatusOK, Code: codeNoReceiver, Msg: "invaliduser: " + ans.InvalidUser}
	}
	return ans.MsgID, err
}

// upload uploads a temporary media file (上传临时素材): typ image, voice,
// video or file; the answer's media_id lasts three days.
func (a *serverAPI) upload(ctx context.Context, c cred, typ, name string, open func() (io.ReadCloser, error)) (string, error) {
	var ans struct {
		MediaID string `json:"media_id"`
	}
	body := func() ([]byte, string, error) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		part, err := mw.CreateFormFile("media", name)
		if err != nil {
			return nil, "", err
		}
		r, err := open()
		if err != nil {
			return nil, "", fmt.Errorf("wecom: open file: %w", err)
		}
		_, err = io.Copy(part, r)
		r.Close()
		if err != nil {
			return nil, "", fmt.Errorf("wecom: read file: %w", err)
		}
		if err := mw.Close(); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), mw.FormDataContentType(), nil
	}
	err := a.call(ctx, c, "media/upload", http.MethodPost, "/cgi-bin/media/upload", url.Values{"type": {typ}}, body,
		func(raw []byte) error { return json.Unmarshal(raw, &ans) })
	if err == nil && ans.MediaID == "" {
		err = &APIError{Op: "media/upload", Status: http.StatusOK, Msg: "no media_id"}
	}
	return ans.MediaID, err
}

// download fetches a temporary media file (获取临时素材): the bytes, or
// an errcode answer in JSON. limit bounds the size.
func (a *serverAPI) download(ctx context.Context, c cred, mediaID string, limit int64) ([]byte, string, error) {
	for attempt := 0; ; attempt++ {
		tok, err := a.token(ctx, c, attempt > 0)
		if err != nil {
			return nil, "", err
		}
		dctx, cancel := context.WithTimeout(ctx, a.timeout)
		q := url.Values{"access_token": {tok}, "media_id": {mediaID}}
		req, err := http.NewRequestWithContext(dctx, http.MethodGet, a.base+"/cgi-bin/media/get?"+q.Encode(), nil)
		if err != nil {
			cancel()
			return nil, "", errors.New("wecom media/get: bad request URL")
		}
		res, err := a.hc.Do(req)
		if err != nil {
			cancel()
			return nil, "", fmt.Errorf("wecom media/get: %w", scrubURL(err))
		}
		data, rerr := io.ReadAll(io.LimitReader(res.Body, limit+1))
		res.Body.Close()
		cancel()
		if rerr != nil {
			return nil, "", fmt.Errorf("wecom media/get: %w", scrubURL(rerr))
		}
		ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
		if res.StatusCode == http.StatusOK && ct != "application/json" && ct != "text/plain" {
			if int64(len(data)) > limit {
				return nil, "", &APIError{Op: "media/get", Status: http.StatusRequestEntityTooLarge, Msg: "file larger than " + strconv.FormatInt(limit, 10) + " bytes"}
			}
			_, params, _ := mime.ParseMediaType(res.Header.Get("Content-Disposition"))
			return data, params["filename"], nil
		}
		var env envelope
		_ = json.Unmarshal(data, &env)
		if tokenInvalid(env.Code) && attempt == 0 {
			a.forget(c)
			continue
		}
		ae := &APIError{Op: "media/get", Status: res.StatusCode, Code: env.Code, Msg: env.Msg}
		if env.Code == codeFreqLimit {
			return nil, "", &connector.RateLimitError{Err: ae}
		}
		return nil, "", ae
	}
}
