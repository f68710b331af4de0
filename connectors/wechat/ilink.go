package wechat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/xconn/xconn/connector"
)

// Wire constants of the iLink bot API (fact sheet §1-§3).
const (
	appID = "bot"
	// clientVersion is iLink-App-ClientVersion: uint32 major<<16|minor<<8|patch
	// in decimal. 132102 is 2.4.6, the value the reference client sends.
	clientVersion = "132102"
	// channelVersion is base_info.channel_version (the reference's value).
	channelVersion = "1.0.6"
	botType        = "3"
	// maxResponseBytes bounds an API response body (as the reference does).
	maxResponseBytes = 1 << 20
)

// errSessionExpired is matched (errors.Is) by an API error with errcode or
// ret -14: the bot token is stale and the user must scan again.
var errSessionExpired = errors.New("wechat: session expired (errcode -14)")

// apiError is a non-zero ret/errcode of an iLink call.
type apiError struct {
	Op      string
	Ret     int
	ErrCode int
	Msg     string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("wechat: %s: ret %d errcode %d %q", e.Op, e.Ret, e.ErrCode, e.Msg)
}

// Is makes errors.Is(err, errSessionExpired) true for -14.
func (e *apiError) Is(target error) bool {
	return target == errSessionExpired && (e.Ret == -14 || e.ErrCode == -14)
}

// httpError is a non-2xx HTTP status of an iLink or CDN call.
type httpError struct {
	Op     string
	Status int
	Reason string
}

func (e *httpError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("wechat: %s: HTTP %d (%s)", e.Op, e.Status, e.Reason)
	}
	return fmt.Sprintf("wechat: %s: HTTP %d", e.Op, e.Status)
}

// baseInfo is base_info, sent in every authenticated POST (§3).
type baseInfo struct {
	ChannelVersion string `json:"channel_version"`
	BotAgent       string `json:"bot_agent"`
}

// envelope is the common part of every response (§4).
type envelope struct {
	Ret     int    `json:"ret"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

func (e envelope) err(op string) error {
	if e.Ret == 0 && e.ErrCode == 0 {
		return nil
	}
	return &apiError{Op: op, Ret: e.Ret, ErrCode: e.ErrCode, Msg: e.ErrMsg}
}

// uin returns a fresh X-WECHAT-UIN: base64 of the decimal text of a random
// uint32 (§2).
func uin() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString([]byte(strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10)))
}

// ilink calls one API host, with or without a bot token.
type ilink struct {
	hc    *http.Client
	base  string // API base URL, without the trailing slash
	token string // bot token; "" for the QR endpoints
	agent string // base_info.bot_agent
}

// endpoint resolves a relative iLink path against base + "/" (§1).
func (c *ilink) endpoint(path string, q url.Values) (string, error) {
	b, err := url.Parse(strings.TrimRight(c.base, "/") + "/")
	if err != nil {
		return "", fmt.Errorf("wechat: API base URL: %w", err)
	}
	u := b.ResolveReference(&url.URL{Path: path})
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// headers sets the common iLink headers (§2).
func (c *ilink) headers(h http.Header, post bool) {
	h.Set("iLink-App-Id", appID)
	h.Set("iLink-App-ClientVersion", clientVersion)
	if post {
		h.Set("Content-Type", "application/json")
		h.Set("AuthorizationType", "ilink_bot_token")
		h.Set("X-WECHAT-UIN", uin())
	}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
}

// base returns the base_info to embed.
func (c *ilink) baseInfo() baseInfo {
	return baseInfo{ChannelVersion: channelVersion, BotAgent: c.agent}
}

// post calls POST path with the JSON body req and decodes the answer into
// out (which must embed or be an envelope-carrying struct); a non-zero
// ret/errcode is an *apiError.
func (c *ilink) post(ctx context.Context, op, path string, q url.Values, req any, out any) error {
	u, err := c.endpoint(path, q)
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("wechat: %s: encode: %w", op, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("wechat: %s: %w", op, err)
	}
	c.headers(hr.Header, true)
	return c.do(hr, op, out)
}

// get calls GET path (QR status polling).
func (c *ilink) get(ctx context.Context, op, path string, q url.Values, out any) error {
	u, err := c.endpoint(path, q)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("wechat: %s: %w", op, err)
	}
	c.headers(hr.Header, false)
	return c.do(hr, op, out)
}

func (c *ilink) do(hr *http.Request, op string, out any) error {
	res, err := c.hc.Do(hr)
	if err != nil {
		return transportError(op, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return connector.Temporary(fmt.Errorf("wechat: %s: read: %w", op, stripURL(err)))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return classifyStatus(&httpError{Op: op, Status: res.StatusCode})
	}
	if len(b) > maxResponseBytes {
		return fmt.Errorf("wechat: %s: response larger than %d bytes", op, maxResponseBytes)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("wechat: %s: decode: %w", op, err)
	}
	if err := env.err(op); err != nil {
		return err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("wechat: %s: decode: %w", op, err)
		}
	}
	return nil
}

// transportError wraps a failed round trip without its URL (which can
// carry CDN parameters) and marks it temporary.
func transportError(op string, err error) error {
	return connector.Temporary(fmt.Errorf("wechat: %s: %w", op, stripURL(err)))
}

// stripURL returns the error inside a *url.Error, whose text names the URL.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// classifyStatus marks 5xx and 429 temporary; other statuses are permanent.
func classifyStatus(e *httpError) error {
	if e.Status >= 500 || e.Status == http.StatusTooManyRequests {
		return connector.Temporary(e)
	}
	return e
}
