package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/xconn/xconn/connector"
	"github.com/xconn/xconn/host"
	"github.com/xconn/xconn/host/openai"
)

// Agents of "xconn host" and "xconn demo".
const (
	agentEcho   = "echo"
	agentOpenAI = "openai"
	// envOpenAIKey holds the model provider's API key (optional for local
	// servers); it is read, never printed.
	envOpenAIKey = "OPENAI_API_KEY"
)

// agentFlags are the agent-selection flags shared by "xconn host" and
// "xconn demo".
type agentFlags struct {
	name      string
	model     string
	baseURL   string
	maxRounds int
	memory    int
	noImages  bool
	// noPreflight skips the model server check at start (preflight).
	noPreflight bool
	// tracerProvider receives the model calls' spans (nil: off); set by
	// the command from the OTEL_* environment, not a flag.
	tracerProvider trace.TracerProvider
}

// register adds the flags; def is the help text of --agent.
func (a *agentFlags) register(fs *pflag.FlagSet, def string) {
	fs.StringVar(&a.name, "agent", agentEcho, def)
	fs.StringVar(&a.model, "model", os.Getenv("XCONN_MODEL"), `model name for --agent openai, e.g. "gpt-4o-mini" or "llama3.2" (env XCONN_MODEL)`)
	fs.StringVar(&a.baseURL, "base-url", envOr("XCONN_MODEL_BASE_URL", openai.DefaultBaseURL),
		"OpenAI-compatible API root for --agent openai, e.g. http://127.0.0.1:11434/v1 for Ollama (env XCONN_MODEL_BASE_URL); the key comes from env "+envOpenAIKey)
	fs.IntVar(&a.maxRounds, "max-tool-rounds", openai.DefaultMaxToolRounds, "tool rounds per user message for --agent openai")
	fs.IntVar(&a.memory, "memory-messages", openai.DefaultMemoryMessages, "past messages per channel the openai agent remembers")
	fs.BoolVar(&a.noImages, "no-images", false, "send images to the model as notes, for text-only models (--agent openai)")
	fs.BoolVar(&a.noPreflight, "no-preflight", false, "do not check the model server, key and model at start (--agent openai)")
}

// describe is the line that says which agent answers: for a model, its
// name, the server and where the key comes from (never the key).
func (a *agentFlags) describe() string {
	if a.name != agentOpenAI {
		return fmt.Sprintf("Agent: %s", a.name)
	}
	key := "no key (" + envOpenAIKey + " is unset)"
	if os.Getenv(envOpenAIKey) != "" {
		key = "key from " + envOpenAIKey
	}
	return fmt.Sprintf("Agent: openai, model %s at %s; %s", a.model, a.baseURL, key)
}

// preflight checks the model server of an openai agent before anything
// is started (unless --no-preflight): a wrong base URL, key or model is
// one line and exit 1; a server that is only busy or failing just now is
// a warning on log, and the command goes on.
func (a *agentFlags) preflight(ctx context.Context, ag host.Agent, log *slog.Logger) error {
	p, ok := ag.(interface{ Preflight(context.Context) error })
	if a.noPreflight || !ok {
		return nil
	}
	err := p.Preflight(ctx)
	var pe *openai.PreflightError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &pe) && !pe.Permanent():
		log.Warn("the model server is not answering normally; going on", "err", err)
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("%w (--no-preflight skips this check)", err)}
}

// check reports usage errors (exit 2) before anything is started.
func (a *agentFlags) check() error {
	switch a.name {
	case agentEcho:
		return nil
	case agentOpenAI:
		if a.model == "" {
			return usageError(fmt.Errorf("--agent openai needs --model (for example --model gpt-4o-mini, or --model llama3.2 with --base-url http://127.0.0.1:11434/v1)"))
		}
		u, err := url.Parse(a.baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError(fmt.Errorf("--base-url %q: want the model server's absolute http(s) API root, such as http://127.0.0.1:11434/v1", a.baseURL))
		}
		return nil
	}
	return usageError(fmt.Errorf("unknown --agent %q (known: %s, %s)", a.name, agentEcho, agentOpenAI))
}

// agentBinder is an agent that needs the host and its store after they
// are built (the host needs the agent first).
type agentBinder interface {
	Bind(h openai.Host, m openai.Memory)
}

// build returns the agent; secrets receives the provider key, log the
// agent's logs. Call check first.
func (a *agentFlags) build(log *slog.Logger, secrets *connector.Redactor) (host.Agent, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	if a.name == agentEcho {
		return host.Echo{}, nil
	}
	key := os.Getenv(envOpenAIKey)
	if secrets != nil {
		secrets.Add(key)
	}
	ag, err := openai.New(openai.Options{Model: a.model, BaseURL: a.baseURL, APIKey: key, Logger: log,
		MaxToolRounds: a.maxRounds, MemoryMessages: a.memory, NoImages: a.noImages, TracerProvider: a.tracerProvider})
	if err != nil {
		return nil, err
	}
	return ag, nil
}

// bindAgent completes an agent that needs the host and its store.
func bindAgent(a host.Agent, h *host.Host, m openai.Memory) {
	if b, ok := a.(agentBinder); ok {
		b.Bind(h, m)
	}
}
