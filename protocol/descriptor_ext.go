package protocol

import (
	"encoding/json"
	"time"
)

// ExtSignedInAt is the extension member of a Descriptor's connection
// object in which an xconn Connector says when the channel's current
// binding was made by a sign-in, in Unix milliseconds. Section 9 gives the
// Descriptor's minimum structure and its JSON Schema admits further
// members; an xAgent that does not know this one ignores it.
const ExtSignedInAt = "x-signed-in-at"

// SignedInAt returns the time in connection.x-signed-in-at, and false when
// the member is absent or not a positive integer.
func (c Connection) SignedInAt() (time.Time, bool) {
	raw, ok := c.Extensions[ExtSignedInAt]
	if !ok {
		return time.Time{}, false
	}
	var ms int64
	if err := json.Unmarshal(raw, &ms); err != nil || ms <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// SetSignedInAt sets connection.x-signed-in-at to t; a zero t removes it.
func (c *Connection) SetSignedInAt(t time.Time) {
	if t.IsZero() {
		delete(c.Extensions, ExtSignedInAt)
		if len(c.Extensions) == 0 {
			c.Extensions = nil
		}
		return
	}
	if c.Extensions == nil {
		c.Extensions = Extensions{}
	}
	c.Extensions[ExtSignedInAt], _ = json.Marshal(t.UnixMilli())
}
