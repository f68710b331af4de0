package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a protocol version "MAJOR.MINOR" (section 12).
type Version struct {
	Major, Minor int
}

// Current returns the protocol version this package implements: 3.0.
func Current() Version { return Version{3, 0} }

// MinimumVersion returns xconn's admission floor. Versions below it are
// rejected by the catalog and by current Connectors (section 12).
func MinimumVersion() Version { return Version{3, 0} }

// ParseVersion parses "3.0"-style strings. A missing version ("") parses as
// 1.0, as the spec prescribes for a legacy Card or hello; such a version is
// then rejected by [Admit]. A bare major ("3") means "3.0".
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Version{1, 0}, nil
	}
	majS, minS, hasMinor := strings.Cut(s, ".")
	maj, err := parseVersionPart(majS)
	if err != nil {
		return Version{}, fmt.Errorf("protocol version %q: %w", s, err)
	}
	min := 0
	if hasMinor {
		if min, err = parseVersionPart(minS); err != nil {
			return Version{}, fmt.Errorf("protocol version %q: %w", s, err)
		}
	}
	return Version{maj, min}, nil
}

func parseVersionPart(s string) (int, error) {
	if s == "" || len(s) > 6 {
		return 0, fmt.Errorf("want MAJOR.MINOR")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("want MAJOR.MINOR with decimal numbers")
		}
	}
	return strconv.Atoi(s)
}

func (v Version) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	return v.Minor < o.Minor
}

// Admit checks that v lies within the admission window [min, max]. Outside
// it returns an *Error with CodeUnsupportedProtocolVersion that says why.
func Admit(v, min, max Version) error {
	if v.Less(min) {
		return Errorf(CodeUnsupportedProtocolVersion, "protocol version %s is below the supported minimum %s", v, min)
	}
	if max.Less(v) {
		return Errorf(CodeUnsupportedProtocolVersion, "protocol version %s is newer than the supported %s", v, max)
	}
	return nil
}

// AdmitVersionString parses s and admits it within [MinimumVersion, Current].
func AdmitVersionString(s string) error {
	v, err := ParseVersion(s)
	if err != nil {
		return &Error{Code: CodeUnsupportedProtocolVersion, Message: err.Error()}
	}
	if s == "" {
		return Errorf(CodeUnsupportedProtocolVersion, "protocol_version is missing (parsed as 1.0, below %s)", MinimumVersion())
	}
	return Admit(v, MinimumVersion(), Current())
}
