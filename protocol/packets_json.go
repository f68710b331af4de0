package protocol

// JSON methods that keep unknown members of every payload type.

func (h *HelloPayload) UnmarshalJSON(b []byte) error {
	type plain HelloPayload
	return decodeWithExtensions(b, (*plain)(h), &h.Extensions)
}
func (h HelloPayload) MarshalJSON() ([]byte, error) {
	type plain HelloPayload
	return encodeWithExtensions((*plain)(&h), h.Extensions)
}

func (h *HelloAckPayload) UnmarshalJSON(b []byte) error {
	type plain HelloAckPayload
	return decodeWithExtensions(b, (*plain)(h), &h.Extensions)
}
func (h HelloAckPayload) MarshalJSON() ([]byte, error) {
	type plain HelloAckPayload
	return encodeWithExtensions((*plain)(&h), h.Extensions)
}

func (e *EmptyPayload) UnmarshalJSON(b []byte) error {
	type plain EmptyPayload
	return decodeWithExtensions(b, (*plain)(e), &e.Extensions)
}
func (e EmptyPayload) MarshalJSON() ([]byte, error) {
	type plain EmptyPayload
	return encodeWithExtensions((*plain)(&e), e.Extensions)
}

func (c *ChannelOpenAckPayload) UnmarshalJSON(b []byte) error {
	type plain ChannelOpenAckPayload
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChannelOpenAckPayload) MarshalJSON() ([]byte, error) {
	type plain ChannelOpenAckPayload
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (s *StatusPayload) UnmarshalJSON(b []byte) error {
	type plain StatusPayload
	return decodeWithExtensions(b, (*plain)(s), &s.Extensions)
}
func (s StatusPayload) MarshalJSON() ([]byte, error) {
	type plain StatusPayload
	return encodeWithExtensions((*plain)(&s), s.Extensions)
}

func (a *AuthStartPayload) UnmarshalJSON(b []byte) error {
	type plain AuthStartPayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthStartPayload) MarshalJSON() ([]byte, error) {
	type plain AuthStartPayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (a *AuthStatePayload) UnmarshalJSON(b []byte) error {
	type plain AuthStatePayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthStatePayload) MarshalJSON() ([]byte, error) {
	type plain AuthStatePayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (a *AuthStatusPayload) UnmarshalJSON(b []byte) error {
	type plain AuthStatusPayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthStatusPayload) MarshalJSON() ([]byte, error) {
	type plain AuthStatusPayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (a *AuthCancelPayload) UnmarshalJSON(b []byte) error {
	type plain AuthCancelPayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthCancelPayload) MarshalJSON() ([]byte, error) {
	type plain AuthCancelPayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (a *AuthCancelAckPayload) UnmarshalJSON(b []byte) error {
	type plain AuthCancelAckPayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthCancelAckPayload) MarshalJSON() ([]byte, error) {
	type plain AuthCancelAckPayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (a *AuthLogoutAckPayload) UnmarshalJSON(b []byte) error {
	type plain AuthLogoutAckPayload
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthLogoutAckPayload) MarshalJSON() ([]byte, error) {
	type plain AuthLogoutAckPayload
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}

func (d *DescriptorPayload) UnmarshalJSON(b []byte) error {
	type plain DescriptorPayload
	return decodeWithExtensions(b, (*plain)(d), &d.Extensions)
}
func (d DescriptorPayload) MarshalJSON() ([]byte, error) {
	type plain DescriptorPayload
	return encodeWithExtensions((*plain)(&d), d.Extensions)
}

func (t *ToolInvokePayload) UnmarshalJSON(b []byte) error {
	type plain ToolInvokePayload
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t ToolInvokePayload) MarshalJSON() ([]byte, error) {
	type plain ToolInvokePayload
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}

func (t *ToolContext) UnmarshalJSON(b []byte) error {
	type plain ToolContext
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t ToolContext) MarshalJSON() ([]byte, error) {
	type plain ToolContext
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}

func (t *ToolInvokeAckPayload) UnmarshalJSON(b []byte) error {
	type plain ToolInvokeAckPayload
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t ToolInvokeAckPayload) MarshalJSON() ([]byte, error) {
	type plain ToolInvokeAckPayload
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}

func (t *ToolProgressPayload) UnmarshalJSON(b []byte) error {
	type plain ToolProgressPayload
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t ToolProgressPayload) MarshalJSON() ([]byte, error) {
	type plain ToolProgressPayload
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}

func (c *ChatMessagePayload) UnmarshalJSON(b []byte) error {
	type plain ChatMessagePayload
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChatMessagePayload) MarshalJSON() ([]byte, error) {
	type plain ChatMessagePayload
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (c *ChatFile) UnmarshalJSON(b []byte) error {
	type plain ChatFile
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChatFile) MarshalJSON() ([]byte, error) {
	type plain ChatFile
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (c *ChatDeltaPayload) UnmarshalJSON(b []byte) error {
	type plain ChatDeltaPayload
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChatDeltaPayload) MarshalJSON() ([]byte, error) {
	type plain ChatDeltaPayload
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (c *ChatAckPayload) UnmarshalJSON(b []byte) error {
	type plain ChatAckPayload
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChatAckPayload) MarshalJSON() ([]byte, error) {
	type plain ChatAckPayload
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (c *ChatActivityPayload) UnmarshalJSON(b []byte) error {
	type plain ChatActivityPayload
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c ChatActivityPayload) MarshalJSON() ([]byte, error) {
	type plain ChatActivityPayload
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}

func (m *MessagePushPayload) UnmarshalJSON(b []byte) error {
	type plain MessagePushPayload
	return decodeWithExtensions(b, (*plain)(m), &m.Extensions)
}
func (m MessagePushPayload) MarshalJSON() ([]byte, error) {
	type plain MessagePushPayload
	return encodeWithExtensions((*plain)(&m), m.Extensions)
}

func (h *HealthResponse) UnmarshalJSON(b []byte) error {
	type plain HealthResponse
	return decodeWithExtensions(b, (*plain)(h), &h.Extensions)
}
func (h HealthResponse) MarshalJSON() ([]byte, error) {
	type plain HealthResponse
	return encodeWithExtensions((*plain)(&h), h.Extensions)
}

func (u *UploadResponse) UnmarshalJSON(b []byte) error {
	type plain UploadResponse
	return decodeWithExtensions(b, (*plain)(u), &u.Extensions)
}
func (u UploadResponse) MarshalJSON() ([]byte, error) {
	type plain UploadResponse
	return encodeWithExtensions((*plain)(&u), u.Extensions)
}
