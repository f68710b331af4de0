package protocol

import "encoding/json"

// Descriptor is a Connection Descriptor (section 9): the user-level runtime
// projection of one channel: its identity, status, enabled Profiles, target
// display data and tool availability. A Connector computes it; xAgent
// validates it against the Card with [ValidateDescriptorAgainstCard].
type Descriptor struct {
	Schema     string           `json:"schema"`
	Connection Connection       `json:"connection"`
	Target     DescriptorTarget `json:"target"`
	Tools      []ToolState      `json:"tools,omitempty"`
	Extensions Extensions       `json:"-"`
}

// Connection is the Descriptor's "connection" object.
type Connection struct {
	ConnectorCardID    string           `json:"connector_card_id"`
	ConnectorID        string           `json:"connector_id"`
	ConnectorChannelID string           `json:"connector_channel_id"`
	TargetType         TargetType       `json:"target_type"`
	Profiles           []Profile        `json:"profiles"`
	Status             ConnectionStatus `json:"status"`
	Extensions         Extensions       `json:"-"`
}

// DescriptorTarget holds display-level account data and redacted hints only.
type DescriptorTarget struct {
	Provider    string     `json:"provider"`
	Label       string     `json:"label,omitempty"`
	DisplayName string     `json:"display_name"`
	AccountHint string     `json:"account_hint,omitempty"`
	Extensions  Extensions `json:"-"`
}

// ToolState is the availability of one Card tool on this channel.
type ToolState struct {
	ToolID                string          `json:"tool_id"`
	Status                ToolStatus      `json:"status"`
	TargetPermissionState PermissionState `json:"target_permission_state,omitempty"`
	Reason                string          `json:"reason,omitempty"`
	Extensions            Extensions      `json:"-"`
}

// ToolState returns the state of the tool with the given id, or false.
func (d *Descriptor) ToolState(id string) (*ToolState, bool) {
	for i := range d.Tools {
		if d.Tools[i].ToolID == id {
			return &d.Tools[i], true
		}
	}
	return nil, false
}

// ToolAvailable reports whether the Descriptor marks the tool available (and
// not denied by the target). Only such tools may be projected to a model.
func (d *Descriptor) ToolAvailable(id string) bool {
	t, ok := d.ToolState(id)
	if !ok || t.Status != ToolAvailable {
		return false
	}
	return t.TargetPermissionState != PermissionDenied && t.TargetPermissionState != PermissionRequiresReauth
}

// Authenticated reports whether the status means the channel is bound to a
// signed-in target. offline and error do not mean signed out (section 9).
func (d *Descriptor) Authenticated() bool {
	switch d.Connection.Status {
	case StatusConnected, StatusDegraded, StatusOffline, StatusError:
		return true
	}
	return false
}

// ParseDescriptor decodes a Descriptor of schema v2 or v1; a v1 Descriptor
// (singular "profile") is normalised to v2 (section 12). It checks JSON syntax
// only; call [ValidateDescriptor] for the rules.
func ParseDescriptor(data []byte) (*Descriptor, error) {
	var d Descriptor
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.Schema == DescriptorSchemaV1 {
		NormalizeDescriptor(&d)
	}
	return &d, nil
}

// NormalizeDescriptor turns a v1 Descriptor, whose connection carries a
// singular "profile", into the v2 model in place. A v2 Descriptor is left as
// it is.
func NormalizeDescriptor(d *Descriptor) {
	if d.Schema != DescriptorSchemaV1 {
		return
	}
	d.Schema = DescriptorSchema
	if raw, ok := d.Connection.Extensions["profile"]; ok {
		var p string
		if json.Unmarshal(raw, &p) == nil && p != "" && !contains(d.Connection.Profiles, p) {
			d.Connection.Profiles = append([]Profile{p}, d.Connection.Profiles...)
		}
		delete(d.Connection.Extensions, "profile")
		if len(d.Connection.Extensions) == 0 {
			d.Connection.Extensions = nil
		}
	}
}

func (d *Descriptor) UnmarshalJSON(b []byte) error {
	type plain Descriptor
	return decodeWithExtensions(b, (*plain)(d), &d.Extensions)
}
func (d Descriptor) MarshalJSON() ([]byte, error) {
	type plain Descriptor
	return encodeWithExtensions((*plain)(&d), d.Extensions)
}
func (c *Connection) UnmarshalJSON(b []byte) error {
	type plain Connection
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c Connection) MarshalJSON() ([]byte, error) {
	type plain Connection
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}
func (t *DescriptorTarget) UnmarshalJSON(b []byte) error {
	type plain DescriptorTarget
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t DescriptorTarget) MarshalJSON() ([]byte, error) {
	type plain DescriptorTarget
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}
func (t *ToolState) UnmarshalJSON(b []byte) error {
	type plain ToolState
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t ToolState) MarshalJSON() ([]byte, error) {
	type plain ToolState
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}
