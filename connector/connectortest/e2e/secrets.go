package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xconn/xconn/protocol"
)

// MinSecretLen is the shortest value [Secrets] looks for: a shorter one
// would match ordinary text.
const MinSecretLen = 6

// Secrets are values that must never appear in a log line, a Card, a
// Descriptor, an ack or an error: the system API key, bot tokens, app
// secrets, the values of form fields a Card marks secret, tokens a fake
// issues. Values shorter than MinSecretLen are ignored.
type Secrets []string

// With returns s plus values (s itself is not changed).
func (s Secrets) With(values ...string) Secrets {
	out := append(Secrets(nil), s...)
	for _, v := range values {
		if len(v) >= MinSecretLen && !containsString(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// OfInput returns the values of input whose field the auth flow flowID of
// card marks secret (input_type password or secret: true).
func OfInput(card *protocol.Card, flowID string, input map[string]string) Secrets {
	flow, ok := card.AuthFlow(flowID)
	if !ok {
		return nil
	}
	var out Secrets
	for _, f := range flow.Fields {
		if f.IsSecret() && input[f.Name] != "" {
			out = out.With(input[f.Name])
		}
	}
	return out
}

// Find returns the line of text that holds a secret, with every secret in
// it replaced by "[secret #i]" (i its index in s), and whether there was
// one.
func (s Secrets) Find(text string) (string, bool) {
	for _, v := range s {
		if len(v) < MinSecretLen {
			continue
		}
		i := strings.Index(text, v)
		if i < 0 {
			continue
		}
		start := strings.LastIndexByte(text[:i], '\n') + 1
		end := len(text)
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			end = i + j
		}
		return s.mask(text[start:end]), true
	}
	return "", false
}

// Check reports an error on tb when text, found in where ("the connector's
// logs", "a Descriptor"), holds a secret, quoting the line with the secret
// masked.
func (s Secrets) Check(tb testing.TB, where, text string) {
	tb.Helper()
	if line, ok := s.Find(text); ok {
		tb.Errorf("a secret is in %s: %s", where, line)
	}
}

func (s Secrets) mask(line string) string {
	for i, v := range s {
		if len(v) >= MinSecretLen {
			line = strings.ReplaceAll(line, v, fmt.Sprintf("[secret #%d]", i))
		}
	}
	return line
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
