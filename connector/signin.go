package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/xconn/xconn/protocol"
)

// Account is what a typed sign-in produces: the channel's binding B (a Go
// value the SDK seals: JSON-encoded, encrypted at rest, never logged or
// sent to xAgent) and how the Descriptor shows the account.
//
// String fields of B tagged `secret:"true"` (tokens, app secrets) are added
// to the redaction set, as are Secrets; both survive restarts.
type Account[B any] struct {
	Binding B
	// DisplayName is the Descriptor's account name (for example a bot's
	// name).
	DisplayName string
	// AccountHint is a redacted account hint such as "1234***89"; see
	// [Hint].
	AccountHint string
	// Secrets lists further values that must never appear in logs, acks
	// or results.
	Secrets []string

	// handoff is the client a handler handed over (Clients.With).
	handoff *handoff
}

// binding seals a into the raw Binding the SDK stores.
func (a Account[B]) binding() (Binding, error) {
	data, err := json.Marshal(a.Binding)
	if err != nil {
		return Binding{}, fmt.Errorf("connector: encode binding %T: %w", a.Binding, err)
	}
	secrets := append(secretStrings(reflect.ValueOf(a.Binding), 0), a.Secrets...)
	return Binding{Data: data, DisplayName: a.DisplayName, AccountHint: a.AccountHint, Secrets: secrets, handoff: a.handoff}, nil
}

// secretStrings returns the non-empty string fields tagged secret:"true"
// of v (a struct or a pointer to one, nested structs included).
func secretStrings(v reflect.Value, depth int) []string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || depth > 8 {
		return nil
	}
	var out []string
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.String && isTrue(f.Tag.Get("secret")) {
			if s := fv.String(); s != "" {
				out = append(out, s)
			}
			continue
		}
		out = append(out, secretStrings(fv, depth+1)...)
	}
	return out
}

func isTrue(tag string) bool { b, _ := strconv.ParseBool(tag); return b }

// Hint returns a redacted account hint of an identifier for the Descriptor:
// its first and last characters around "***" ("123456789" → "1***9",
// "bot_1234567890ab" → "bo***ab"), or "***" for values shorter than six
// characters. It never shows more than a third of s, at most 4 characters
// at each end.
func Hint(s string) string {
	r := []rune(s)
	n := len(r) / 3 / 2
	if n == 0 {
		return "***"
	}
	if n > 4 {
		n = 4
	}
	return string(r[:n]) + "***" + string(r[len(r)-n:])
}

// FlowOptions declares a sign-in flow's Card entry beside its handler.
type FlowOptions struct {
	// Title is the user-facing title (required by the spec; default
	// "Sign in to " + the target's label).
	Title string
	// Description is optional guidance.
	Description string
	// TargetType defaults to the connector's (single) target type.
	TargetType protocol.TargetType
	// Default makes this the Card's ui.login_flow.
	Default bool
}

// SignInFunc signs a channel in from the typed, validated input of a form
// flow. Its error is reported as status failed with a secret-free message:
// a *protocol.Error's message, else a generic one; a *protocol.Error with
// CodeInvalidAuthInput becomes an ack error instead. ctx ends with the
// auth.start request (Options.ToolTimeout at most).
type SignInFunc[In, B any] func(ctx context.Context, ch *Channel, in In) (Account[B], error)

// AddForm registers a form sign-in flow declared by the struct type In:
// the Card's auth_flows[] entry (fields with name, label, input_type,
// required, secret, placeholder, help_text) is derived from In's fields and
// tags (see the package documentation, "Struct tags"), and fn receives the
// input decoded into In, numbers as numbers. A successful fn binds the
// channel: the client constructor of SetClient runs before the channel
// reports authenticated, and its error fails the sign-in. Call it before
// Start; a bad registration is returned at once.
func AddForm[In, B any](s *Server, id string, fn SignInFunc[In, B], opts FlowOptions) error {
	if fn == nil {
		return s.registerFail(fmt.Errorf("connector: auth flow %q: nil handler", id))
	}
	fields, decode, err := formOf[In]()
	if err != nil {
		return s.registerFail(fmt.Errorf("connector: auth flow %q: %w", id, err))
	}
	if err := s.setBindingType(reflect.TypeFor[B]()); err != nil {
		return s.registerFail(fmt.Errorf("connector: auth flow %q: %w", id, err))
	}
	raw := func(ctx context.Context, ch *Channel, in Input) (Binding, error) {
		v, vs := decode(in.values)
		if len(vs) > 0 {
			return Binding{}, protocol.Errorf(protocol.CodeInvalidAuthInput, "%s", vs.Error())
		}
		acct, err := fn(ctx, ch, v)
		if err != nil {
			return Binding{}, err
		}
		b, err := acct.binding()
		if err != nil {
			s.dropHandoff(ctx, ch.id, &Binding{handoff: acct.handoff})
			return Binding{}, err
		}
		for _, f := range fields {
			if f.IsSecret() && in.values[f.Name] != "" {
				b.Secrets = append(b.Secrets, in.values[f.Name])
			}
		}
		return b, nil
	}
	decl := protocol.AuthFlow{ID: id, TargetType: opts.TargetType, Type: protocol.AuthFlowForm,
		Title: opts.Title, Description: opts.Description, Fields: fields}
	return s.addDeclaredFlow(decl, Form(raw), opts.Default)
}

// QRResult is a state reported by a typed QR flow's Poll.
type QRResult[B any] struct {
	// Status is pending, scanned, authenticated, failed, expired, or
	// qr_refresh_required when the target expired the code before the
	// SDK's TTL (the next auth.status refresh=true issues a new code).
	Status protocol.AuthStatus
	// Account is required when Status is authenticated.
	Account *Account[B]
	// Message is a secret-free description shown to the user.
	Message string
}

// QROptions declares a typed QR sign-in flow.
type QROptions[B any] struct {
	FlowOptions
	// Issue returns the QR text of a new or refreshed code (s.Token is the
	// SDK's unguessable token of that code); nil makes the text the token.
	Issue func(ctx context.Context, s *QRSession) (string, error)
	// Poll, optional, is called on each auth.status to ask the target how
	// the code is doing; connectors driven by their own web page call
	// CompleteQR / Server.AuthScanned / Server.AuthFail instead.
	Poll func(ctx context.Context, s *QRSession) (QRResult[B], error)
	// TTL is one code's lifetime (default DefaultQRTTL), PollInterval the
	// suggested polling interval (default DefaultPollInterval), ImageSize
	// the PNG's size in pixels (default 256).
	TTL          time.Duration
	PollInterval time.Duration
	ImageSize    int
}

// AddQR registers a QR sign-in flow (type qr_login) and declares its
// Card entry. The SDK issues tokens, QR text and PNG, handles expiry and
// refresh; an authenticated Poll result binds the channel as AddForm does.
// Call it before Start.
func AddQR[B any](s *Server, id string, q QROptions[B]) error {
	if err := s.setBindingType(reflect.TypeFor[B]()); err != nil {
		return s.registerFail(fmt.Errorf("connector: auth flow %q: %w", id, err))
	}
	cfg := QRFlow{Issue: q.Issue, TTL: q.TTL, PollInterval: q.PollInterval, ImageSize: q.ImageSize}
	if q.Poll != nil {
		cfg.Poll = func(ctx context.Context, qs *QRSession) (QRState, error) {
			r, err := q.Poll(ctx, qs)
			if err != nil {
				return QRState{}, err
			}
			st := QRState{Status: r.Status, Message: r.Message}
			if r.Account != nil {
				b, err := r.Account.binding()
				if err != nil {
					s.dropHandoff(ctx, qs.Channel.ID(), &Binding{handoff: r.Account.handoff})
					return QRState{}, err
				}
				st.Binding = &b
			}
			return st, nil
		}
	}
	decl := protocol.AuthFlow{ID: id, TargetType: q.TargetType, Type: protocol.AuthFlowQRLogin,
		Title: q.Title, Description: q.Description}
	return s.addDeclaredFlow(decl, QR(cfg), q.Default)
}

// CompleteQR ends the QR sign-in of token as authenticated with account a,
// for connectors whose own web page confirms the code (the typed form of
// Server.AuthComplete).
func CompleteQR[B any](ctx context.Context, s *Server, token string, a Account[B]) error {
	b, err := a.binding()
	if err != nil {
		s.dropHandoff(ctx, "", &Binding{handoff: a.handoff})
		return err
	}
	return s.AuthComplete(ctx, token, b)
}

// formField is one derived field and how to decode it.
type formField struct {
	protocol.AuthField
	index []int
	kind  reflect.Kind
}

// formOf derives the auth fields of struct type In and a decoder from the
// checked string values to In.
func formOf[In any]() ([]protocol.AuthField, func(map[string]string) (In, protocol.Violations), error) {
	t := reflect.TypeFor[In]()
	if t.Kind() != reflect.Struct {
		return nil, nil, fmt.Errorf("form input %v is not a struct type", t)
	}
	var ff []formField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _ := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return nil, nil, fmt.Errorf("form field %s: type %v is not a string, number or boolean", f.Name, f.Type)
		}
		secret := isTrue(f.Tag.Get("secret"))
		input := f.Tag.Get("input")
		switch input {
		case "":
			input = protocol.InputText
			if secret {
				input = protocol.InputPassword
			}
		case protocol.InputText, protocol.InputPassword:
		default:
			return nil, nil, fmt.Errorf("form field %s: input %q is not text or password", f.Name, input)
		}
		label := f.Tag.Get("label")
		if label == "" {
			label = name
		}
		af := protocol.AuthField{Name: name, Label: label, InputType: input,
			Required: !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero"),
			Secret:   secret || input == protocol.InputPassword, Placeholder: f.Tag.Get("placeholder"),
			HelpText: f.Tag.Get("help")}
		if d, ok := f.Tag.Lookup("default"); ok {
			if af.Secret {
				return nil, nil, fmt.Errorf("form field %s: a secret field cannot have a default", f.Name)
			}
			af.DefaultValue = &d
		}
		ff = append(ff, formField{AuthField: af, index: f.Index, kind: f.Type.Kind()})
	}
	if len(ff) == 0 {
		return nil, nil, fmt.Errorf("form input %v has no exported fields", t)
	}
	fields := make([]protocol.AuthField, len(ff))
	for i, f := range ff {
		fields[i] = f.AuthField
	}
	decode := func(values map[string]string) (In, protocol.Violations) {
		var in In
		var vs protocol.Violations
		rv := reflect.ValueOf(&in).Elem()
		for _, f := range ff {
			s, ok := values[f.Name]
			if !ok || s == "" {
				continue
			}
			if err := setField(rv.FieldByIndex(f.index), f.kind, strings.TrimSpace(s), s); err != nil {
				vs = append(vs, protocol.Violation{Path: "input." + f.Name, Reason: err.Error()})
			}
		}
		return in, vs
	}
	return fields, decode, nil
}

// setField parses a form value into v; messages never quote the value.
func setField(v reflect.Value, k reflect.Kind, trimmed, raw string) error {
	switch k {
	case reflect.String:
		v.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(trimmed)
		if err != nil {
			return fmt.Errorf("must be true or false")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(trimmed, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("must be an integer that fits %d bits", v.Type().Bits())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(trimmed, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("must be a non-negative integer that fits %d bits", v.Type().Bits())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(trimmed, v.Type().Bits())
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return fmt.Errorf("must be a finite number")
		}
		v.SetFloat(n)
	}
	return nil
}
