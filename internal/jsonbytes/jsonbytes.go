// Package jsonbytes holds the small byte scanners the hot-path decoders
// share (internal/wsconn's envelope decoder, the connector's tool.invoke
// decoder): they walk valid JSON without decoding it. They never allocate and
// hold no state, so they are safe for concurrent use. Callers check validity
// (json.Valid) first: on invalid input the scanners only promise not to panic.
package jsonbytes

// EachMember calls fn with the name (raw, without quotes) and the value
// bytes of each member of the JSON object obj, in order, until fn returns
// false. It reports false when obj is not an object, a name has escapes, or
// fn returned false.
func EachMember(obj []byte, fn func(key, val []byte) bool) bool {
	return EachMemberAt(obj, func(_, _ int, key, val []byte) bool { return fn(key, val) })
}

// EachMemberAt is EachMember that also passes the member's span in obj,
// from its name to the end of its value.
func EachMemberAt(obj []byte, fn func(start, end int, key, val []byte) bool) bool {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = SkipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		kend, esc := StringEnd(obj, i)
		if esc || kend < 0 {
			return false
		}
		start, key := i, obj[i+1:kend-1]
		i = SkipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		vstart := SkipSpace(obj, i+1)
		vend := ValueEnd(obj, vstart)
		if vend < 0 || !fn(start, vend, key, obj[vstart:vend]) {
			return false
		}
		i = SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
	return i < len(obj)
}

// StringEnd returns the index after the JSON string starting at b[i] and
// whether it contains escapes; -1 when b[i] does not start a string.
func StringEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	esc := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, esc
}

// ValueEnd returns the index after the JSON value starting at b[i]; -1 when
// it does not end.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := StringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := StringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !IsSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// SkipSpace returns the index of the first non-space byte of b at or after i.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// NumberEnd returns the index after the JSON number at b[i] and true, or
// false when b[i] does not start a number by the grammar of RFC 8259:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
// Unlike the other scanners it checks what it reads.
func NumberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// TrimSpace returns b without leading and trailing JSON whitespace (space,
// tab, newline, carriage return). Unlike bytes.TrimSpace it keeps form feeds,
// vertical tabs and Unicode spaces, which JSON does not allow around a value.
func TrimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && IsSpace(b[i]) {
		i++
	}
	for j > i && IsSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}
