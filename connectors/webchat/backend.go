package webchat

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors the web side maps to pages and HTTP statuses.
var (
	// errLoginInvalid: the login token is unknown, used or expired.
	errLoginInvalid = errors.New("webchat: login link invalid or expired")
	// errNoRoom: no authenticated channel has this room.
	errNoRoom = errors.New("webchat: no such room")
	// errWrongCode: the access code does not match.
	errWrongCode = errors.New("webchat: wrong access code")
	// errChannelGone: the channel of a browser session no longer works.
	errChannelGone = errors.New("webchat: chat is no longer connected")
	// errNoFile: the file is unknown, expired or of another channel.
	errNoFile = errors.New("webchat: no such file")
)

// upload is a file a browser posts with a message.
type upload struct {
	Filename string
	MimeType string
	Body     io.Reader
}

// fileContent is a stored file opened for a browser.
type fileContent struct {
	Body     io.ReadCloser // an io.ReadSeeker too when the storage allows
	Size     int64
	Filename string
	MimeType string
	ModTime  time.Time
}

// backend is what the web side needs from the connector built on the SDK
// (implemented by *Connector). Implementations are safe for concurrent use.
type backend interface {
	// postUserMessage publishes a user message of channel to xAgent
	// (durably) and returns it as the browser will see it.
	postUserMessage(ctx context.Context, channel, text string, file *upload) (MessageEvent, error)
	// loginScanned checks token and moves its sign-in to "scanned".
	loginScanned(ctx context.Context, token string) error
	// loginConfirm moves the sign-in of token to "authenticated", records
	// the browser session (by its key) with the channel, and returns the
	// channel.
	loginConfirm(ctx context.Context, token, sessionKey string) (string, error)
	// roomExists reports whether an authenticated channel has room.
	roomExists(ctx context.Context, room string) bool
	// enterRoom checks the access code of room (in constant time) and
	// returns its channel.
	enterRoom(ctx context.Context, room, code string) (string, error)
	// openFile opens file ref of channel.
	openFile(ctx context.Context, channel, ref string) (fileContent, error)
	// channelState reports the connection status of channel
	// ("connected" when the chat works).
	channelState(ctx context.Context, channel string) string
}
