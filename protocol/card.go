package protocol

import "encoding/json"

// Card is the Connector Card served at GET /connector-card.json (section 4.1):
// the static, public capability declaration of a Connector. It never says
// whether a user is signed in. Build one in code, then call [ValidateCard].
//
// Every object type of the Card keeps unknown members in its Extensions
// field, so that decoding and re-encoding a Card loses nothing.
type Card struct {
	Schema          string     `json:"schema"`
	ProtocolVersion string     `json:"protocol_version"`
	Build           Build      `json:"build"`
	ConnectorCardID string     `json:"connector_card_id"`
	Connector       CardInfo   `json:"connector"`
	Supports        Supports   `json:"supports"`
	Tools           []Tool     `json:"tools,omitempty"`
	AuthFlows       []AuthFlow `json:"auth_flows,omitempty"`
	UI              *UI        `json:"ui,omitempty"`
	Security        *Security  `json:"security,omitempty"`
	Extensions      Extensions `json:"-"`
}

// Build identifies the build of a Connector. The same value appears in the
// Card and in /health. The JSON Schema requires build_time.
type Build struct {
	Version    string     `json:"version,omitempty"`
	GitTag     string     `json:"git_tag,omitempty"`
	GitRev     string     `json:"git_rev,omitempty"`
	BuildTime  string     `json:"build_time"`
	Extensions Extensions `json:"-"`
}

// CardInfo is the Card's "connector" object.
type CardInfo struct {
	Name        string     `json:"name"`
	Version     string     `json:"version"`
	Vendor      string     `json:"vendor,omitempty"`
	Description string     `json:"description,omitempty"`
	Extensions  Extensions `json:"-"`
}

// Supports is the Card's static capability declaration.
type Supports struct {
	UserChannelMode string       `json:"user_channel_mode,omitempty"`
	TargetTypes     []TargetType `json:"target_types"`
	Targets         []Target     `json:"targets,omitempty"`
	Profiles        []Profile    `json:"profiles"`
	Extensions      Extensions   `json:"-"`
}

// Target describes one target system a Connector reaches.
type Target struct {
	TargetType  TargetType `json:"target_type"`
	Provider    string     `json:"provider"`
	Label       string     `json:"label"`
	Description string     `json:"description,omitempty"`
	Extensions  Extensions `json:"-"`
}

// Tool is one entry of Card tools[]: a real, callable tool exposed to models
// under its ToolID. InputSchema and OutputSchema are JSON Schema documents kept
// as raw JSON; build InputSchema with [WithConnectorChannelIDInputSchema].
type Tool struct {
	ToolID          string          `json:"tool_id"`
	Profile         Profile         `json:"profile,omitempty"`
	Title           string          `json:"title,omitempty"`
	Description     string          `json:"description,omitempty"`
	RelatedSkillIDs []string        `json:"related_skill_ids,omitempty"`
	InputSchema     json.RawMessage `json:"input_schema"`
	OutputSchema    json.RawMessage `json:"output_schema,omitempty"`
	Extensions      Extensions      `json:"-"`
}

// AuthFlow is one entry of Card auth_flows[].
type AuthFlow struct {
	ID           string          `json:"id"`
	TargetType   TargetType      `json:"target_type,omitempty"`
	Type         string          `json:"type"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	Fields       []AuthField     `json:"fields,omitempty"`
	ConfigSchema json.RawMessage `json:"config_schema,omitempty"`
	UISchema     json.RawMessage `json:"ui_schema,omitempty"`
	Extensions   Extensions      `json:"-"`
}

// AuthField is one input of a form flow.
type AuthField struct {
	Name         string     `json:"name"`
	Label        string     `json:"label"`
	InputType    string     `json:"input_type"`
	Required     bool       `json:"required,omitempty"`
	Placeholder  string     `json:"placeholder,omitempty"`
	HelpText     string     `json:"help_text,omitempty"`
	Secret       bool       `json:"secret,omitempty"`
	DefaultValue *string    `json:"default_value,omitempty"`
	Extensions   Extensions `json:"-"`
}

// IsSecret reports whether the field holds sensitive input: it is marked
// secret or it is a password field.
func (f AuthField) IsSecret() bool { return f.Secret || f.InputType == InputPassword }

// UI holds hints for a generic sign-in UI.
type UI struct {
	LoginFlow  *LoginFlow `json:"login_flow,omitempty"`
	Extensions Extensions `json:"-"`
}

// LoginFlow describes the steps of the default sign-in flow.
type LoginFlow struct {
	FlowID     string      `json:"flow_id,omitempty"`
	Steps      []LoginStep `json:"steps,omitempty"`
	Extensions Extensions  `json:"-"`
}

// LoginStep is one step of a LoginFlow.
type LoginStep struct {
	Type         string     `json:"type"`
	RequestType  string     `json:"request_type,omitempty"`
	ResponseType string     `json:"response_type,omitempty"`
	Extensions   Extensions `json:"-"`
}

// Security declares the Connector's trust and data handling.
type Security struct {
	TrustLevel        string     `json:"trust_level,omitempty"`
	APIKeyRequired    bool       `json:"api_key_required"`
	RequiresSignature bool       `json:"requires_signature,omitempty"`
	DataClasses       []string   `json:"data_classes,omitempty"`
	Extensions        Extensions `json:"-"`
}

// Tool returns the tool with the given id, or false.
func (c *Card) Tool(id string) (*Tool, bool) {
	for i := range c.Tools {
		if c.Tools[i].ToolID == id {
			return &c.Tools[i], true
		}
	}
	return nil, false
}

// AuthFlow returns the auth flow with the given id, or false.
func (c *Card) AuthFlow(id string) (*AuthFlow, bool) {
	for i := range c.AuthFlows {
		if c.AuthFlows[i].ID == id {
			return &c.AuthFlows[i], true
		}
	}
	return nil, false
}

// DeclaresProfile reports whether supports.profiles lists p.
func (c *Card) DeclaresProfile(p Profile) bool { return contains(c.Supports.Profiles, p) }

// ParseCard decodes a Card. It checks JSON syntax and types only; call
// [ValidateCard] for the rules of the spec.
func ParseCard(data []byte) (*Card, error) {
	var c Card
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// JSON methods that keep unknown members.

func (c *Card) UnmarshalJSON(b []byte) error {
	type plain Card
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c Card) MarshalJSON() ([]byte, error) {
	type plain Card
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}
func (b *Build) UnmarshalJSON(d []byte) error {
	type plain Build
	return decodeWithExtensions(d, (*plain)(b), &b.Extensions)
}
func (b Build) MarshalJSON() ([]byte, error) {
	type plain Build
	return encodeWithExtensions((*plain)(&b), b.Extensions)
}
func (c *CardInfo) UnmarshalJSON(b []byte) error {
	type plain CardInfo
	return decodeWithExtensions(b, (*plain)(c), &c.Extensions)
}
func (c CardInfo) MarshalJSON() ([]byte, error) {
	type plain CardInfo
	return encodeWithExtensions((*plain)(&c), c.Extensions)
}
func (s *Supports) UnmarshalJSON(b []byte) error {
	type plain Supports
	return decodeWithExtensions(b, (*plain)(s), &s.Extensions)
}
func (s Supports) MarshalJSON() ([]byte, error) {
	type plain Supports
	return encodeWithExtensions((*plain)(&s), s.Extensions)
}
func (t *Target) UnmarshalJSON(b []byte) error {
	type plain Target
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t Target) MarshalJSON() ([]byte, error) {
	type plain Target
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}
func (t *Tool) UnmarshalJSON(b []byte) error {
	type plain Tool
	return decodeWithExtensions(b, (*plain)(t), &t.Extensions)
}
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	return encodeWithExtensions((*plain)(&t), t.Extensions)
}
func (a *AuthFlow) UnmarshalJSON(b []byte) error {
	type plain AuthFlow
	return decodeWithExtensions(b, (*plain)(a), &a.Extensions)
}
func (a AuthFlow) MarshalJSON() ([]byte, error) {
	type plain AuthFlow
	return encodeWithExtensions((*plain)(&a), a.Extensions)
}
func (f *AuthField) UnmarshalJSON(b []byte) error {
	type plain AuthField
	return decodeWithExtensions(b, (*plain)(f), &f.Extensions)
}
func (f AuthField) MarshalJSON() ([]byte, error) {
	type plain AuthField
	return encodeWithExtensions((*plain)(&f), f.Extensions)
}
func (u *UI) UnmarshalJSON(b []byte) error {
	type plain UI
	return decodeWithExtensions(b, (*plain)(u), &u.Extensions)
}
func (u UI) MarshalJSON() ([]byte, error) {
	type plain UI
	return encodeWithExtensions((*plain)(&u), u.Extensions)
}
func (l *LoginFlow) UnmarshalJSON(b []byte) error {
	type plain LoginFlow
	return decodeWithExtensions(b, (*plain)(l), &l.Extensions)
}
func (l LoginFlow) MarshalJSON() ([]byte, error) {
	type plain LoginFlow
	return encodeWithExtensions((*plain)(&l), l.Extensions)
}
func (l *LoginStep) UnmarshalJSON(b []byte) error {
	type plain LoginStep
	return decodeWithExtensions(b, (*plain)(l), &l.Extensions)
}
func (l LoginStep) MarshalJSON() ([]byte, error) {
	type plain LoginStep
	return encodeWithExtensions((*plain)(&l), l.Extensions)
}
func (s *Security) UnmarshalJSON(b []byte) error {
	type plain Security
	return decodeWithExtensions(b, (*plain)(s), &s.Extensions)
}
func (s Security) MarshalJSON() ([]byte, error) {
	type plain Security
	return encodeWithExtensions((*plain)(&s), s.Extensions)
}
