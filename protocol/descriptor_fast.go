package protocol

import (
	"encoding/json"

	"github.com/xconn/xconn/internal/jsonbytes"
)

// Decoding the common Descriptor in one pass.
//
// Decoding a Descriptor with encoding/json walks it by reflection, and the
// extension-keeping UnmarshalJSON of each level checks and scans its bytes
// once more. A host decodes one with every channel.open.ack, so a reopen
// of many channels spends most of its time there. The decoders here read
// the common shape directly: only the declared members, each at most once,
// with their exact names; strings without escapes; profiles an array of
// such strings; tools an array of objects; null for any of them. They
// give exactly the value json.Unmarshal gives for such input (with nil
// Extensions at every level) and report false for anything else (an
// extension member, a case variant of a name, a duplicate, an escape,
// invalid UTF-8), which the
// caller then decodes with encoding/json as before. They decode only: the
// caller validates the result as it validates any decoded Descriptor.
// FuzzDecodeDescriptorFast holds both paths equal.

// DecodeChannelOpenAckFast decodes the channel.open.ack payload data into p
// when it has the common shape (see above) and reports whether it did; p
// is left unchanged otherwise. The result equals what
// [Envelope.DecodePayload] gives for the same payload.
func DecodeChannelOpenAckFast(data []byte, p *ChannelOpenAckPayload) bool {
	if !json.Valid(data) {
		return false
	}
	var (
		out      ChannelOpenAckPayload
		seenID   bool
		seenDesc bool
	)
	ok := jsonbytes.EachMember(data, func(key, val []byte) bool {
		switch string(key) {
		case "connector_channel_id":
			if seenID {
				return false
			}
			seenID = true
			if isNull(val) {
				return true
			}
			s, ok := fastString(val)
			out.ConnectorChannelID = s
			return ok
		case "connection_descriptor":
			if seenDesc {
				return false
			}
			seenDesc = true
			if isNull(val) {
				return true
			}
			d := new(Descriptor)
			if !decodeDescriptorFast(val, d) {
				return false
			}
			out.ConnectionDescriptor = d
			return true
		}
		return false
	})
	if !ok {
		return false
	}
	*p = out
	return true
}

// DecodeDescriptorFast decodes the Descriptor data into d when it has the
// common shape (see above) and reports whether it did; d is left unchanged
// otherwise. The result equals what json.Unmarshal gives into a zero
// Descriptor. Unlike [ParseDescriptor] it does not normalise a v1
// Descriptor.
func DecodeDescriptorFast(data []byte, d *Descriptor) bool {
	if !json.Valid(data) {
		return false
	}
	var out Descriptor
	if !decodeDescriptorFast(data, &out) {
		return false
	}
	*d = out
	return true
}

// decodeDescriptorFast decodes the valid JSON data into the zero d.
func decodeDescriptorFast(data []byte, d *Descriptor) bool {
	var seen [4]bool
	once := func(i int) bool {
		if seen[i] {
			return false
		}
		seen[i] = true
		return true
	}
	return jsonbytes.EachMember(data, func(key, val []byte) bool {
		i := -1
		switch string(key) {
		case "schema":
			i = 0
		case "connection":
			i = 1
		case "target":
			i = 2
		case "tools":
			i = 3
		}
		if i < 0 || !once(i) {
			return false
		}
		if isNull(val) {
			return true // encoding/json leaves the zero value
		}
		var ok bool
		switch i {
		case 0:
			d.Schema, ok = fastString(val)
		case 1:
			ok = decodeConnectionFast(val, &d.Connection)
		case 2:
			ok = decodeTargetFast(val, &d.Target)
		case 3:
			if val[0] != '[' {
				return false
			}
			d.Tools = []ToolState{}
			ok = eachElement(val, func(el []byte) bool {
				var t ToolState
				if !decodeToolStateFast(el, &t) {
					return false
				}
				d.Tools = append(d.Tools, t)
				return true
			})
		}
		return ok
	})
}

func decodeConnectionFast(data []byte, c *Connection) bool {
	var seen [6]bool
	return jsonbytes.EachMember(data, func(key, val []byte) bool {
		var (
			i   int
			dst *string
		)
		switch string(key) {
		case "connector_card_id":
			i, dst = 0, &c.ConnectorCardID
		case "connector_id":
			i, dst = 1, &c.ConnectorID
		case "connector_channel_id":
			i, dst = 2, &c.ConnectorChannelID
		case "target_type":
			i, dst = 3, &c.TargetType
		case "status":
			i, dst = 4, &c.Status
		case ExtSignedInAt:
			if _, dup := c.Extensions[ExtSignedInAt]; dup {
				return false
			}
			if c.Extensions == nil {
				c.Extensions = Extensions{}
			}
			c.Extensions[ExtSignedInAt] = cloneRaw(val)
			return true
		case "profiles":
			if seen[5] {
				return false
			}
			seen[5] = true
			if isNull(val) {
				return true
			}
			if val[0] != '[' {
				return false
			}
			c.Profiles = []Profile{}
			return eachElement(val, func(el []byte) bool {
				s, ok := fastString(el)
				c.Profiles = append(c.Profiles, s)
				return ok
			})
		default:
			return false
		}
		if seen[i] {
			return false
		}
		seen[i] = true
		if isNull(val) {
			return true
		}
		s, ok := fastString(val)
		*dst = s
		return ok
	})
}

func decodeTargetFast(data []byte, t *DescriptorTarget) bool {
	return decodeStringMembers(data, [4]string{"provider", "label", "display_name", "account_hint"},
		[4]*string{&t.Provider, &t.Label, &t.DisplayName, &t.AccountHint})
}

func decodeToolStateFast(data []byte, t *ToolState) bool {
	return decodeStringMembers(data, [4]string{"tool_id", "status", "target_permission_state", "reason"},
		[4]*string{&t.ToolID, &t.Status, &t.TargetPermissionState, &t.Reason})
}

// decodeStringMembers decodes an object whose members are all optional
// strings: member names[i] goes to *dsts[i]. It reports false, for the
// encoding/json fallback, on any other member, a repeated one or a value
// that is not a plain string or null.
func decodeStringMembers(data []byte, names [4]string, dsts [4]*string) bool {
	var seen [4]bool
	return jsonbytes.EachMember(data, func(key, val []byte) bool {
		i := 0
		for i < len(names) && string(key) != names[i] {
			i++
		}
		if i == len(names) || seen[i] {
			return false
		}
		seen[i] = true
		if isNull(val) {
			return true
		}
		s, ok := fastString(val)
		*dsts[i] = s
		return ok
	})
}

// eachElement calls fn with each element of the valid JSON array arr until
// fn returns false, and reports whether every call returned true.
func eachElement(arr []byte, fn func(el []byte) bool) bool {
	i := jsonbytes.SkipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := jsonbytes.ValueEnd(arr, i)
		if end < 0 || !fn(arr[i:end]) {
			return false
		}
		i = jsonbytes.SkipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = jsonbytes.SkipSpace(arr, i+1)
		}
	}
	return i < len(arr)
}
