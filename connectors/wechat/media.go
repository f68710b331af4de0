package wechat

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/xconn/xconn/connector"
)

// errBadMedia marks a media item that cannot be fetched or decrypted
// however often it is tried (a 4xx, a bad key, bad padding).
var errBadMedia = errors.New("wechat: media unusable")

// encryptECB is AES-128-ECB with PKCS#7 padding (fact sheet §11.1).
func encryptECB(key, plain []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("wechat: aes: %w", err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	out := make([]byte, len(plain)+pad)
	copy(out, plain)
	for i := len(plain); i < len(out); i++ {
		out[i] = byte(pad)
	}
	for i := 0; i < len(out); i += aes.BlockSize {
		b.Encrypt(out[i:i+aes.BlockSize], out[i:i+aes.BlockSize])
	}
	return out, nil
}

// decryptECB reverses encryptECB.
func decryptECB(key, ct []byte) ([]byte, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: aes key: %w", errBadMedia, err)
	}
	if len(ct) == 0 || len(ct)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: ciphertext of %d bytes", errBadMedia, len(ct))
	}
	out := make([]byte, len(ct))
	for i := 0; i < len(ct); i += aes.BlockSize {
		b.Decrypt(out[i:i+aes.BlockSize], ct[i:i+aes.BlockSize])
	}
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize || !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, fmt.Errorf("%w: bad padding", errBadMedia)
	}
	return out[:len(out)-pad], nil
}

// decodeKey reads an AES key in every form the fact sheet lists (§11.1):
// a bare 32-character hex string, base64 of 16 raw bytes, or base64 of 32
// hex characters.
func decodeKey(s string) ([]byte, error) {
	if len(s) == 32 {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")); err != nil {
			return nil, fmt.Errorf("%w: aes key is neither hex nor base64", errBadMedia)
		}
	}
	switch len(b) {
	case 16:
		return b, nil
	case 32:
		if k, err := hex.DecodeString(string(b)); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: aes key decodes to %d bytes", errBadMedia, len(b))
}

// cdnMedia is CDNMedia (§8.2).
type cdnMedia struct {
	EncryptQueryParam string `json:"encrypt_query_param,omitempty"`
	AESKey            string `json:"aes_key,omitempty"`
	EncryptType       int    `json:"encrypt_type,omitempty"`
	FullURL           string `json:"full_url,omitempty"`
}

func (m *cdnMedia) usable() bool { return m != nil && (m.FullURL != "" || m.EncryptQueryParam != "") }

// download fetches and decrypts one media object (§12). hexKey is
// image_item.aeskey, preferred when set; without any key the bytes are
// taken as they are.
func (c *Connector) download(ctx context.Context, m *cdnMedia, hexKey string) ([]byte, error) {
	u := m.FullURL
	if u == "" {
		u = c.opts.CDNURL + "/download?encrypted_query_param=" + url.QueryEscape(m.EncryptQueryParam)
	}
	var key []byte
	var err error
	switch {
	case hexKey != "":
		key, err = decodeKey(hexKey)
	case m.AESKey != "":
		key, err = decodeKey(m.AESKey)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cdnTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: download URL", errBadMedia)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, transportError("cdn download", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		err := classifyStatus(&httpError{Op: "cdn download", Status: res.StatusCode})
		if !connector.IsTemporary(err) {
			err = fmt.Errorf("%w: %w", errBadMedia, err)
		}
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, c.opts.MaxMediaBytes+aes.BlockSize+1))
	if err != nil {
		return nil, transportError("cdn download", err)
	}
	if int64(len(body)) > c.opts.MaxMediaBytes+aes.BlockSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadMedia, c.opts.MaxMediaBytes)
	}
	if key == nil {
		return body, nil
	}
	return decryptECB(key, body)
}

// Media types of getuploadurl (§11).
const (
	mediaImage = 1
	mediaVideo = 2
	mediaFile  = 3
)

// uploaded is a file on the CDN, ready for a message item.
type uploaded struct {
	param   string // x-encrypted-param
	key     []byte
	rawSize int64
	ctSize  int64
	md5     string
}

// upload encrypts plain, registers it with getuploadurl for user and posts
// it to the CDN (§11), with up to 3 attempts on 5xx or a missing
// x-encrypted-param.
func (cl *Client) upload(ctx context.Context, user string, mediaType int, plain []byte) (*uploaded, error) {
	key := make([]byte, 16)
	fk := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("wechat: key: %w", err)
	}
	if _, err := rand.Read(fk); err != nil {
		return nil, fmt.Errorf("wechat: filekey: %w", err)
	}
	ct, err := encryptECB(key, plain)
	if err != nil {
		return nil, err
	}
	sum := md5.Sum(plain)
	up := &uploaded{key: key, rawSize: int64(len(plain)), ctSize: int64(len(ct)), md5: hex.EncodeToString(sum[:])}
	filekey := hex.EncodeToString(fk)
	req := struct {
		FileKey       string   `json:"filekey"`
		MediaType     int      `json:"media_type"`
		ToUserID      string   `json:"to_user_id"`
		RawSize       int64    `json:"rawsize"`
		RawFileMD5    string   `json:"rawfilemd5"`
		FileSize      int64    `json:"filesize"`
		ThumbRawSize  int64    `json:"thumb_rawsize"`
		ThumbRawMD5   string   `json:"thumb_rawfilemd5"`
		ThumbFileSize int64    `json:"thumb_filesize"`
		NoNeedThumb   bool     `json:"no_need_thumb"`
		AESKey        string   `json:"aeskey"`
		Base          baseInfo `json:"base_info"`
	}{FileKey: filekey, MediaType: mediaType, ToUserID: user, RawSize: up.rawSize, RawFileMD5: up.md5,
		FileSize: up.ctSize, NoNeedThumb: true, AESKey: hex.EncodeToString(key), Base: cl.api.baseInfo()}
	var out struct {
		UploadParam   string `json:"upload_param"`
		UploadFullURL string `json:"upload_full_url"`
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	err = cl.api.post(sctx, "getuploadurl", "ilink/bot/getuploadurl", nil, req, &out)
	cancel()
	if err != nil {
		return nil, err
	}
	target := out.UploadFullURL
	if target == "" {
		if out.UploadParam == "" {
			return nil, errors.New("wechat: getuploadurl: neither upload_full_url nor upload_param")
		}
		target = cl.c.opts.CDNURL + "/upload?encrypted_query_param=" + url.QueryEscape(out.UploadParam) +
			"&filekey=" + url.QueryEscape(filekey)
	}
	for attempt := 1; ; attempt++ {
		up.param, err = cl.c.postCDN(ctx, target, ct)
		if err == nil || !connector.IsTemporary(err) || attempt == 3 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return up, nil
}

// postCDN posts one ciphertext and returns x-encrypted-param.
func (c *Connector) postCDN(ctx context.Context, target string, ct []byte) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cdnTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(ct))
	if err != nil {
		return "", errors.New("wechat: cdn upload: bad upload URL")
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.ContentLength = int64(len(ct))
	res, err := c.hc.Do(req)
	if err != nil {
		return "", transportError("cdn upload", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode >= 400 && res.StatusCode < 500 {
		return "", &httpError{Op: "cdn upload", Status: res.StatusCode, Reason: trim(res.Header.Get("x-error-message"), 120)}
	}
	if res.StatusCode != http.StatusOK {
		return "", connector.Temporary(&httpError{Op: "cdn upload", Status: res.StatusCode})
	}
	p := res.Header.Get("x-encrypted-param")
	if p == "" {
		return "", connector.Temporary(errors.New("wechat: cdn upload: no x-encrypted-param"))
	}
	return p, nil
}

// officialKey encodes an outbound media.aes_key as the official client
// does: base64 of the 32-character hex string (§11.1).
func officialKey(key []byte) string {
	return base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(key)))
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
