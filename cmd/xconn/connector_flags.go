package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// connectorFlags are the flags of every command that reaches a Connector
// Server at a BASE_URL the way xAgent does ("xconn host", "xconn check",
// and any command built like them): the system API key in its three forms
// and the sign-in flow with its form input. Each command registers one
// value with register, so the commands accept the same flags with the same
// help and resolve them alike (key, authInputs). It is not safe for
// concurrent use; a command owns its own.
type connectorFlags struct {
	apiKey string   // --api-key or --api-key-file; key() falls back to XCONN_API_KEY
	flowID string   // --auth-flow
	inputs []string // --auth-input and --auth-input-file, key=value in command-line order
}

// register adds --api-key, --api-key-file, --auth-flow, --auth-input and
// --auth-input-file to fs; flowHelp says what --auth-flow does for this
// command.
func (f *connectorFlags) register(fs *pflag.FlagSet, flowHelp string) {
	registerAPIKey(fs, &f.apiKey, "system API key of the connector, sent as Authorization: Bearer (default: env XCONN_API_KEY)")
	fs.StringVar(&f.flowID, "auth-flow", "", flowHelp)
	registerAuthInputs(fs, &f.inputs)
}

// key returns the system API key: --api-key or --api-key-file, else the
// environment's XCONN_API_KEY.
func (f *connectorFlags) key() string {
	if f.apiKey == "" {
		f.apiKey = os.Getenv("XCONN_API_KEY")
	}
	return f.apiKey
}

// authInputs returns the form input as a map. A malformed item is a usage
// error that names its key, never its value.
func (f *connectorFlags) authInputs() (map[string]string, error) {
	return parseInputs(f.inputs)
}

// parseInputs turns key=value items into a map; see authInputs.
func parseInputs(list []string) (map[string]string, error) {
	in := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError(fmt.Errorf("--auth-input %q: want key=value", redactInput(kv)))
		}
		in[k] = v
	}
	return in, nil
}

// redactInput hides the value of a key=value argument.
func redactInput(kv string) string {
	if k, _, ok := strings.Cut(kv, "="); ok {
		return k + "=…"
	}
	if len(kv) > 32 { // no "=": perhaps a secret typed alone
		return "…"
	}
	return kv
}

// parseBaseURL checks a BASE_URL argument: the absolute http(s) URL of a
// Connector Server's root. Anything else is a usage error in one sentence;
// a URL typed without its scheme ("127.0.0.1:8080") is told the form it
// probably meant.
func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return u, nil
	}
	if s != "" && !strings.Contains(s, "://") {
		if v, err := url.Parse("http://" + s); err == nil && v.Host != "" {
			return nil, usageError(fmt.Errorf("BASE_URL %q has no scheme: did you mean http://%s?", s, s))
		}
	}
	return nil, usageError(fmt.Errorf("BASE_URL %q: want the connector's absolute http(s) URL, such as http://127.0.0.1:8080", s))
}
