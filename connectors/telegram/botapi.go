package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/connector"
)

// maxResponseBytes bounds one Bot API JSON answer (100 updates fit easily).
const maxResponseBytes = 8 << 20

// botAPI is a small client of the Telegram Bot API over the HTTP client
// of the SDK's TargetAPI (the proxy, the connection pool, no redirects),
// shared by every channel and poller of a Connector: one base URL, the
// request timeout and the flood-control wait. Every method takes the bot
// token; the token appears only in request URLs, and every error that
// leaves botAPI is free of it (see transportError). Safe for concurrent
// use.
type botAPI struct {
	base    string // e.g. "https://api.telegram.org", no trailing slash
	hc      *http.Client
	timeout time.Duration       // per request, long polls excepted
	rl      connector.RateLimit // 429 retry_after waited in a call
}

// APIError is a refusal of the Bot API: its error_code (the HTTP status),
// description and parameters.retry_after. Descriptions never contain the
// token.
type APIError struct {
	Method      string
	Code        int
	Description string
	// RetryAfter is parameters.retry_after of a 429 (flood control).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("telegram: %s: %d %s", e.Method, e.Code, e.Description)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %v)", e.RetryAfter)
	}
	return s
}

// Temporary reports whether a later retry may succeed: flood control
// (429) and server-side failures (5xx).
func (e *APIError) Temporary() bool { return e.Code == http.StatusTooManyRequests || e.Code >= 500 }

// Unauthorized reports a token Telegram does not accept (revoked or
// unknown): 401, or the JSON 404 "Not Found" Telegram answers for a
// malformed token (a proxy's 404 page is not one).
func (e *APIError) Unauthorized() bool {
	return e.Code == http.StatusUnauthorized || (e.Code == http.StatusNotFound && e.Description == "Not Found" && e.Method != "download")
}

// transportError is a request that got no Bot API answer (network, proxy,
// TLS, timeout). Its text never holds the request URL's token: the
// *url.Error of net/http is rebuilt with the URL redacted, and only its
// inner error is kept for errors.Is (context.Canceled, timeouts).
type transportError struct {
	msg string
	err error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.err }

// redactedURL is what errors show instead of a request URL.
func (a *botAPI) redactedURL(method string) string { return a.base + "/bot[REDACTED]/" + method }

// scrub turns an error of http.Client.Do into a token-free transportError.
func (a *botAPI) scrub(token, method string, err error) error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
		err = &url.Error{Op: ue.Op, URL: a.redactedURL(method), Err: ue.Err}
	}
	msg := "telegram: " + method + ": " + err.Error()
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[REDACTED]")
	}
	return &transportError{msg: msg, err: inner}
}

// response is the Bot API's answer envelope.
type response struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// call POSTs params as JSON to method and decodes the result into out
// (nil ignores it). A 429 whose retry_after is at most the wait's MaxWait is
// waited out and the call repeated (Telegram did not process it); longer
// ones come back as a *connector.RateLimitError around the *APIError, and
// every other refusal as an *APIError.
func (a *botAPI) call(ctx context.Context, token, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram: %s: encode: %w", method, err)
	}
	return a.rl.Do(ctx, func(ctx context.Context) error {
		return a.do(ctx, token, method, "application/json", bytes.NewReader(body), out)
	})
}

// do sends one request and decodes its answer.
func (a *botAPI) do(ctx context.Context, token, method, contentType string, body io.Reader, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/bot"+token+"/"+method, body)
	if err != nil {
		return a.scrub(token, method, err)
	}
	req.Header.Set("Content-Type", contentType)
	res, err := a.hc.Do(req)
	if err != nil {
		return a.scrub(token, method, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes))
	if err != nil {
		return a.scrub(token, method, err)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		// A proxy's or load balancer's page, not the Bot API's JSON.
		return &APIError{Method: method, Code: res.StatusCode, Description: "unexpected answer: " + http.StatusText(res.StatusCode)}
	}
	if !r.OK {
		e := &APIError{Method: method, Code: r.ErrorCode, Description: strings.ReplaceAll(r.Description, token, "[REDACTED]")}
		if e.Code == 0 {
			e.Code = res.StatusCode
		}
		if r.Parameters != nil && r.Parameters.RetryAfter > 0 {
			// Capped: a huge value would overflow into a negative wait,
			// and the poller would then ask again at once, in a loop.
			e.RetryAfter = time.Duration(min(r.Parameters.RetryAfter, int(connector.MaxRetryAfter/time.Second))) * time.Second
		}
		if e.Code == http.StatusTooManyRequests {
			return &connector.RateLimitError{RetryAfter: e.RetryAfter, Err: e} // flood control
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("telegram: %s: decode result: %w", method, err)
	}
	return nil
}

// upload sends a file with multipart/form-data (sendPhoto, sendDocument,
// ...): fields as form values, the file under field. open is called for
// each attempt (a 429 retry re-reads the file). The body streams through
// a pipe; its writer goroutine ends before upload returns.
func (a *botAPI) upload(ctx context.Context, token, method string, fields map[string]string, field, filename, mimeType string,
	open func() (io.ReadCloser, error), out any) error {
	return a.rl.Do(ctx, func(ctx context.Context) error {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		done := make(chan struct{})
		go func() {
			defer close(done)
			pw.CloseWithError(writeMultipart(mw, fields, field, filename, mimeType, open))
		}()
		err := a.do(ctx, token, method, mw.FormDataContentType(), pr, out)
		pr.CloseWithError(errors.New("telegram: request ended")) // unblocks the writer
		<-done
		return err
	})
}

func writeMultipart(mw *multipart.Writer, fields map[string]string, field, filename, mimeType string, open func() (io.ReadCloser, error)) error {
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			return err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, field, sanitizeFilename(filename)))
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	h.Set("Content-Type", mimeType)
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(part, f); err != nil {
		return err
	}
	return mw.Close()
}

// sanitizeFilename keeps a file name safe inside a quoted header value.
func sanitizeFilename(name string) string {
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, name)
	if name == "" {
		return "file"
	}
	return name
}

// download fetches a file by its getFile file_path, at most limit bytes.
func (a *botAPI) download(ctx context.Context, token, filePath string, limit int64) ([]byte, error) {
	const method = "download"
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	u := a.base + "/file/bot" + token + "/" + (&url.URL{Path: filePath}).EscapedPath()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, a.scrub(token, method, err)
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return nil, a.scrub(token, method, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, &APIError{Method: method, Code: res.StatusCode, Description: http.StatusText(res.StatusCode)}
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, a.scrub(token, method, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("telegram: file larger than %d bytes", limit)
	}
	return data, nil
}

// isTemporary classifies a Bot API failure: flood control, 5xx and
// transport failures are worth a retry; other refusals are not.
func isTemporary(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	var te *transportError
	return errors.As(err, &te) || connector.IsTemporary(err)
}

// isUnauthorized reports a token that Telegram no longer accepts.
func isUnauthorized(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Unauthorized()
}

// chatIDParam renders a chat id for the Bot API.
func chatIDParam(id int64) string { return strconv.FormatInt(id, 10) }
