package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/xconn/xconn/connector"
)

// Values of --log.
const (
	logAuto       = "auto"
	logPretty     = "pretty"
	logStructured = "structured"
)

// logStyleHelp is the help of --log.
const logStyleHelp = `log style: "structured" (one logfmt record per line on stderr), "pretty" (the readable view on stdout, warnings in the same shape), or "auto": pretty when stdout is a terminal, else structured`

// logFlags are --log and --log-level, the same on every command that logs
// (demo, host, serve): one style per process, chosen once. The pretty
// view of demo and host shows packets, so it logs warnings and above
// unless told otherwise; a serve command has no packet view, so its log
// shows info in either style (serving set).
type logFlags struct {
	style   string // --log
	level   string // --log-level; "" is the style's default
	serving bool   // a serve command: info by default in the pretty view too
}

// register adds --log and --log-level to fs; serving is the serve
// commands' default level (see logFlags).
func (l *logFlags) register(fs *pflag.FlagSet, serving bool) {
	l.serving = serving
	fs.StringVar(&l.style, "log", logAuto, logStyleHelp)
	levels := "warn in the pretty view, info in the structured style"
	if serving {
		levels = "info"
	}
	fs.StringVar(&l.level, "log-level", "", "lowest level logged: debug, info, warn or error (default: "+levels+")")
}

// resolve returns whether the pretty view is on (for auto: stdout is a
// terminal) and the level to log at. An unknown value is a usage error.
func (l *logFlags) resolve(stdout io.Writer) (pretty bool, level slog.Level, err error) {
	pretty, err = prettyLog(l.style, stdout)
	if err != nil {
		return false, 0, err
	}
	switch {
	case l.level != "":
		if err := level.UnmarshalText([]byte(l.level)); err != nil {
			return false, 0, usageError(fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level))
		}
	case pretty && !l.serving:
		level = slog.LevelWarn
	default:
		level = slog.LevelInfo
	}
	return pretty, level, nil
}

// newLogger is the one logger of a command, every record redacted by
// secrets (nil: the SDK's default redaction only): in the pretty view the
// readable shape on out, written under mu (the mutex of the command's own
// line printer, so that lines never interleave); else logfmt on errOut.
func newLogger(pretty bool, level slog.Level, mu *sync.Mutex, out, errOut io.Writer, secrets *connector.Redactor) *slog.Logger {
	var h slog.Handler
	if pretty {
		h = newPrettyHandler(mu, out, level)
	} else {
		h = slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level})
	}
	return slog.New(connector.NewRedactingHandler(h, secrets))
}

// prettyLog reports whether --log value style asks for the readable view
// on stdout; an unknown value is a usage error.
func prettyLog(style string, stdout io.Writer) (bool, error) {
	switch style {
	case logPretty:
		return true, nil
	case logStructured:
		return false, nil
	case logAuto, "":
		f, ok := stdout.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())), nil
	}
	return false, usageError(fmt.Errorf("--log %q: want %s, %s or %s", style, logAuto, logPretty, logStructured))
}

// prettyHandler writes log records in the readable view's shape, "15:04:05.000  WARN  message key=value",
// through the same line writer as the packet view, so the two never
// interleave mid-line. Safe for concurrent use.
type prettyHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
	attrs []slog.Attr
	group string
}

func newPrettyHandler(mu *sync.Mutex, w io.Writer, level slog.Leveler) *prettyHandler {
	return &prettyHandler{mu: mu, w: w, level: level}
}

func (h *prettyHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *prettyHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	fmt.Fprintf(&b, "%s  %-5s %s", t.Format("15:04:05.000"), r.Level.String(), r.Message)
	write := func(a slog.Attr) {
		if a.Equal(slog.Attr{}) {
			return
		}
		k := a.Key
		if h.group != "" {
			k = h.group + "." + k
		}
		v := a.Value.Resolve().String()
		if strings.ContainsAny(v, " \t\n\"=") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(func(a slog.Attr) bool { write(a); return true })
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *prettyHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *prettyHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
