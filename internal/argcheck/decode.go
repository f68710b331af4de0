package argcheck

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errNotJSON reports arguments that are not one valid JSON value.
var errNotJSON = errors.New("argcheck: not valid JSON")

// decodeInstance decodes one JSON value into what jsonschema.UnmarshalJSON
// makes of it (objects as map[string]any, arrays as []any, numbers as
// json.Number, strings, bools, nil) in one pass after one validity check,
// without encoding/json's reflection and Decoder buffering. Strings with
// escapes or invalid UTF-8 are left to encoding/json, member by member.
func decodeInstance(b []byte) (any, error) {
	if !json.Valid(b) {
		return nil, errNotJSON
	}
	d := instDecoder{b: b}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	return v, nil
}

// instDecoder reads values from valid JSON.
type instDecoder struct {
	b []byte
	i int
}

func (d *instDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *instDecoder) value() (any, error) {
	d.space()
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		d.i += len("true")
		return true, nil
	case c == 'f':
		d.i += len("false")
		return false, nil
	case c == 'n':
		d.i += len("null")
		return nil, nil
	default:
		start := d.i
		for d.i < len(d.b) && numberByte(d.b[d.i]) {
			d.i++
		}
		return json.Number(d.b[start:d.i]), nil
	}
}

func (d *instDecoder) object() (any, error) {
	m := map[string]any{}
	d.i++ // {
	d.space()
	if d.b[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.space()
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		d.i++ // :
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.b[d.i] == ',' {
			d.i++
			continue
		}
		d.i++ // }
		return m, nil
	}
}

func (d *instDecoder) array() (any, error) {
	a := []any{}
	d.i++ // [
	d.space()
	if d.b[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.b[d.i] == ',' {
			d.i++
			continue
		}
		d.i++ // ]
		return a, nil
	}
}

func numberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str reads the string at d.i.
func (d *instDecoder) str() (string, error) {
	start := d.i
	plain := true
	j := d.i + 1
	for ; d.b[j] != '"'; j++ {
		if d.b[j] == '\\' {
			plain = false
			j++
		}
	}
	d.i = j + 1
	body := d.b[start+1 : j]
	if plain && utf8.Valid(body) {
		return string(body), nil
	}
	var s string // escapes or invalid UTF-8: encoding/json's rules
	if err := json.Unmarshal(d.b[start:d.i], &s); err != nil {
		return "", err
	}
	return s, nil
}
