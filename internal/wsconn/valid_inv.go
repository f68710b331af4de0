package wsconn

import (
	"encoding/json"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// validStack is the nesting depth validJSON tracks itself; deeper documents
// go to json.Valid (which also enforces encoding/json's depth limit).
const validStack = 64

// validJSON reports whether data is one valid JSON value, exactly as
// json.Valid does (invalid UTF-8 inside strings is accepted, as there), in
// one pass without encoding/json's per-byte state function calls.
func validJSON(data []byte) bool {
	end, ok := valueEnd(data, jsonbytes.SkipSpace(data, 0))
	return ok && jsonbytes.SkipSpace(data, end) == len(data)
}

// eachValidMember calls fn with the name (raw, without quotes) and the value
// of each member of the JSON object data, in order, checking the whole of
// data as json.Valid does on the way. It reports false when data is not a
// valid JSON object, a name has escapes, or fn returned false.
func eachValidMember(data []byte, fn func(key, val []byte) bool) bool {
	i := jsonbytes.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = jsonbytes.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return jsonbytes.SkipSpace(data, i+1) == len(data)
	}
	for {
		start := i
		keyEnd, v, ok := member(data, i)
		if !ok {
			return false
		}
		key := data[start+1 : keyEnd-1]
		for _, c := range key {
			if c == '\\' {
				return false
			}
		}
		end, ok := valueEnd(data, v)
		if !ok || !fn(key, data[v:end]) {
			return false
		}
		i = jsonbytes.SkipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = jsonbytes.SkipSpace(data, i+1)
		case '}':
			return jsonbytes.SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// valueEnd checks the JSON value that starts at data[i] as json.Valid does
// and returns the index after it.
func valueEnd(data []byte, i int) (int, bool) {
	origin := i
	var (
		stack [validStack]byte // '{' or '[' per open container
		depth int
		ok    bool
	)
	for {
		// A value starts at i.
		if i >= len(data) {
			return 0, false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth == validStack {
				return deepValueEnd(data, origin)
			}
			stack[depth] = c
			depth++
			i = jsonbytes.SkipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				depth--
				i++
				break
			}
			if c == '{' {
				if _, i, ok = member(data, i); !ok {
					return 0, false
				}
			}
			continue
		case c == '"':
			if i, ok = stringEnd(data, i); !ok {
				return 0, false
			}
		case c == 't':
			if i, ok = lit(data, i, "true"); !ok {
				return 0, false
			}
		case c == 'f':
			if i, ok = lit(data, i, "false"); !ok {
				return 0, false
			}
		case c == 'n':
			if i, ok = lit(data, i, "null"); !ok {
				return 0, false
			}
		default:
			if i, ok = jsonbytes.NumberEnd(data, i); !ok {
				return 0, false
			}
		}
		// A value ended at i: close containers, or find the next value.
		for {
			if depth == 0 {
				return i, true
			}
			i = jsonbytes.SkipSpace(data, i)
			if i >= len(data) {
				return 0, false
			}
			c := data[i]
			if c == ',' {
				i = jsonbytes.SkipSpace(data, i+1)
				if stack[depth-1] == '{' {
					if _, i, ok = member(data, i); !ok {
						return 0, false
					}
				}
				break
			}
			if c != stack[depth-1]+2 {
				return 0, false
			}
			depth--
			i++
		}
	}
}

// member reads a member name and its colon at data[i]. It returns the
// index after the name and the index of the value.
func member(data []byte, i int) (keyEnd, value int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, 0, false
	}
	if keyEnd, ok = stringEnd(data, i); !ok {
		return 0, 0, false
	}
	i = jsonbytes.SkipSpace(data, keyEnd)
	if i >= len(data) || data[i] != ':' {
		return 0, 0, false
	}
	return keyEnd, jsonbytes.SkipSpace(data, i+1), true
}

// deepValueEnd is valueEnd for a value nested deeper than validStack:
// encoding/json checks it (with its own depth limit).
func deepValueEnd(data []byte, i int) (int, bool) {
	end := jsonbytes.ValueEnd(data, i)
	if end < 0 || !json.Valid(data[i:end]) {
		return 0, false
	}
	return end, true
}

// stringEnd returns the index after the string starting at data[i] (a '"').
func stringEnd(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return 0, false
				}
				for _, h := range data[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func lit(data []byte, i int, s string) (int, bool) {
	end := i + len(s)
	if end > len(data) || string(data[i:end]) != s {
		return 0, false
	}
	return end, true
}
