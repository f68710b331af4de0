package wechat

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/protocol"
)

// Binding is what a signed-in channel keeps (sealed by the SDK): the bot
// account of a confirmed QR code (fact sheet §5.2).
type Binding struct {
	BotToken string `json:"bot_token" secret:"true"`
	BotID    string `json:"bot_id"`
	// BaseURL is the account's API base ("baseurl").
	BaseURL string `json:"base_url"`
	// OwnerID is the WeChat user who scanned ("ilink_user_id").
	OwnerID string `json:"owner_id"`
}

// qrState is the iLink side of one sign-in session: the current iLink QR
// session id, the host its status is polled at, and how many codes were
// issued. The SDK keeps it with the session (connector.WithQRData).
type qrState struct {
	qrcode   string
	pollBase string
	codes    int
	expired  bool
}

// issueQR asks iLink for a new QR code (get_bot_qrcode, §5.1) and returns
// the text to encode: qrcode_img_content.
func (c *Connector) issueQR(ctx context.Context, s *connector.QRSession) (string, error) {
	tooMany := false
	connector.WithQRData(s, func(q *qrState) { tooMany = q.codes > MaxQRRefreshes })
	if tooMany {
		return "", fmt.Errorf("wechat: the QR code was refreshed %d times", MaxQRRefreshes)
	}
	// The channel's own bot token, when it has one, lets iLink answer
	// binded_redirect for a bot that is still bound; other channels'
	// tokens are never sent.
	req := struct {
		LocalTokenList []string `json:"local_token_list"`
	}{LocalTokenList: []string{}}
	if b, err := c.clients.Binding(s.Channel); err == nil && b.BotToken != "" {
		req.LocalTokenList = append(req.LocalTokenList, b.BotToken)
	}
	var out struct {
		QRCode  string `json:"qrcode"`
		Content string `json:"qrcode_img_content"`
	}
	api := &ilink{hc: c.hc, base: c.opts.APIURL, agent: c.agent()}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := api.post(ctx, "get_bot_qrcode", "ilink/bot/get_bot_qrcode", url.Values{"bot_type": {botType}}, req, &out); err != nil {
		return "", err
	}
	if out.QRCode == "" || out.Content == "" {
		return "", errors.New("wechat: get_bot_qrcode: empty qrcode or qrcode_img_content")
	}
	connector.WithQRData(s, func(q *qrState) {
		q.qrcode, q.pollBase, q.expired = out.QRCode, c.opts.APIURL, false
		q.codes++
	})
	return out.Content, nil
}

// qrStatusAnswer is get_qrcode_status's answer (§5.2).
type qrStatusAnswer struct {
	Status       string `json:"status"`
	BotToken     string `json:"bot_token"`
	BotID        string `json:"ilink_bot_id"`
	BaseURL      string `json:"baseurl"`
	UserID       string `json:"ilink_user_id"`
	RedirectHost string `json:"redirect_host"`
}

// Messages a user sees for the QR states that need them.
const (
	msgExpiredRefresh = "the QR code expired; refresh it to get a new one"
	msgExpiredFinal   = "the QR code expired too often; start the sign-in again"
	msgNeedVerifyCode = "WeChat asks for the verification number shown on your phone, which this sign-in cannot take: " +
		"cancel on the phone and start the sign-in again"
	msgVerifyBlocked = "WeChat blocked this sign-in after too many wrong verification numbers: wait a while, then start the sign-in again"
	msgBindedNoCreds = "this WeChat bot is already connected elsewhere: sign it out there, or start the sign-in again"
)

// pollQR asks iLink how the current code is doing and maps its status
// onto the protocol's (§5.2).
func (c *Connector) pollQR(ctx context.Context, s *connector.QRSession) (connector.QRResult[Binding], error) {
	var q qrState
	connector.WithQRData(s, func(st *qrState) { q = *st })
	if q.qrcode == "" {
		return connector.QRResult[Binding]{}, errors.New("wechat: no iLink QR code for this sign-in session")
	}
	if q.expired {
		// Waiting for auth.status refresh=true, which issues a new code.
		return connector.QRResult[Binding]{Status: protocol.AuthQRRefreshRequired, Message: msgExpiredRefresh}, nil
	}
	api := &ilink{hc: c.hc, base: q.pollBase, agent: c.agent()}
	pctx, cancel := context.WithTimeout(ctx, c.opts.QRPollTimeout)
	defer cancel()
	var out qrStatusAnswer
	err := api.get(pctx, "get_qrcode_status", "ilink/bot/get_qrcode_status", url.Values{"qrcode": {q.qrcode}}, &out)
	if err != nil {
		if connector.IsTemporary(err) && ctx.Err() == nil {
			// A long poll that timed out, or a gateway 5xx: still waiting.
			return connector.QRResult[Binding]{Status: protocol.AuthPending}, nil
		}
		return connector.QRResult[Binding]{}, err
	}
	switch out.Status {
	case "wait", "":
		return connector.QRResult[Binding]{Status: protocol.AuthPending}, nil
	case "scaned":
		return connector.QRResult[Binding]{Status: protocol.AuthScanned, Message: "scanned; confirm on the phone"}, nil
	case "scaned_but_redirect":
		if h := strings.TrimSpace(out.RedirectHost); h != "" && !strings.ContainsAny(h, "/?#@ ") {
			connector.WithQRData(s, func(st *qrState) { st.pollBase = c.scheme() + "://" + h })
		}
		return connector.QRResult[Binding]{Status: protocol.AuthScanned, Message: "scanned; confirm on the phone"}, nil
	case "expired":
		if q.codes > MaxQRRefreshes {
			return connector.QRResult[Binding]{Status: protocol.AuthFailed, Message: msgExpiredFinal}, nil
		}
		connector.WithQRData(s, func(st *qrState) { st.expired = true })
		return connector.QRResult[Binding]{Status: protocol.AuthQRRefreshRequired, Message: msgExpiredRefresh}, nil
	case "need_verifycode":
		return connector.QRResult[Binding]{Status: protocol.AuthFailed, Message: msgNeedVerifyCode}, nil
	case "verify_code_blocked":
		return connector.QRResult[Binding]{Status: protocol.AuthFailed, Message: msgVerifyBlocked}, nil
	case "binded_redirect":
		if out.BotToken != "" && out.BotID != "" {
			return c.confirmed(out), nil
		}
		// The bot is bound to this client: the channel's own binding,
		// whose token went in local_token_list, is still good.
		if b, err := c.clients.Binding(s.Channel); err == nil && b.BotToken != "" {
			return connector.QRResult[Binding]{Status: protocol.AuthAuthenticated, Account: account(b)}, nil
		}
		return connector.QRResult[Binding]{Status: protocol.AuthFailed, Message: msgBindedNoCreds}, nil
	case "confirmed":
		if out.BotToken == "" || out.BotID == "" {
			return connector.QRResult[Binding]{Status: protocol.AuthFailed,
				Message: "WeChat confirmed the sign-in without a bot account; start the sign-in again"}, nil
		}
		return c.confirmed(out), nil
	default:
		// An undocumented status: keep waiting (tolerant).
		c.srv.Logger().Info("wechat: unknown QR status; still waiting", "status", out.Status)
		return connector.QRResult[Binding]{Status: protocol.AuthPending}, nil
	}
}

// confirmed turns confirmed credentials into the account (§5.2: an empty
// baseurl falls back to the default host).
func (c *Connector) confirmed(out qrStatusAnswer) connector.QRResult[Binding] {
	base := strings.TrimRight(out.BaseURL, "/")
	if u, err := url.Parse(base); base == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		base = c.opts.APIURL
	}
	b := Binding{BotToken: out.BotToken, BotID: out.BotID, BaseURL: base, OwnerID: out.UserID}
	return connector.QRResult[Binding]{Status: protocol.AuthAuthenticated, Account: account(b)}
}

// account shows a bot in the Descriptor: a redacted hint of its id.
func account(b Binding) *connector.Account[Binding] {
	return &connector.Account[Binding]{Binding: b, DisplayName: "WeChat bot " + connector.Hint(b.BotID),
		AccountHint: connector.Hint(b.BotID)}
}

// scheme is the scheme of the configured API URL, used for a redirect host.
func (c *Connector) scheme() string {
	if strings.HasPrefix(c.opts.APIURL, "http://") {
		return "http"
	}
	return "https"
}
