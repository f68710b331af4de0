package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/conformance"
	"github.com/xconn/xconn/conformance/xagent"
)

// newCheckCmd builds "xconn check": the conformance suite against a
// Connector Server's Base URL. It exits 0 when every MUST passes (and every
// SHOULD with --strict), 1 otherwise, 2 on usage errors.
func newCheckCmd() *cobra.Command {
	var (
		opts               conformance.Options
		conn               connectorFlags // --api-key(-file), --auth-flow, --auth-input(-file), as for xconn host
		jsonOut, list, md  bool
		junitFile          string
		toolArgs           string
		invoke, invokeArgs string
		xagentMode         bool
		listen             string
		inboundCmd         string
	)
	cmd := &cobra.Command{
		Use:   "check BASE_URL",
		Short: "Check a Connector Server against the protocol 3.0 conformance suite",
		Long: `check runs the conformance suite against the Connector Server at BASE_URL over
HTTP and WebSocket and prints one line per requirement and a summary line
"N passed, N failed, N skipped". Requirements whose capability the Connector
does not declare are skipped with the reason.

Checks that need a signed-in channel run only with --auth-flow; they deliver a
few short test messages to the target system, so use a test account. For a
qr_login flow the QR code is shown on stderr and the suite waits for a scan, or
--auth-open-url confirms the QR URL by GET then POST. When the run ends, also
on failure or interrupt, the suite signs that channel out (auth.logout).

A Card does not say which tools have side effects, so the suite never invents
tool arguments: tool.invoke runs only with --tool ID, a Card tool, which it
invokes on the signed-in channel with --tool-args JSON (a JSON object;
connector_channel_id is set to the channel). --invoke TOOL --args JSON are the
same flags under the names "xconn host" uses. Without --tool it is skipped.

The inbound checks (imv2.inbound-delivered, imv2.inbound-message-id, and the
redelivery checks) need the target to send a message. --inbound-cmd CMD makes
it do so: after the sign-in, the suite runs CMD with "sh -c" up to three
times, each time waiting for the Connector's chat.message; CMD must exit 0
once the target has sent one new message to the signed-in channel, within
--timeout (then its process group is killed). CMD runs in check's
environment plus XCONN_CHANNEL_ID (the signed-in connector_channel_id),
XCONN_BASE_URL (BASE_URL), XCONN_INBOUND_TEXT (a text unique to this call)
and XCONN_INBOUND_SEQ (1, 2 or 3); its output goes to stderr. It needs
--auth-flow. XCONN_INBOUND_CMD is its default.

When nothing answers at BASE_URL, it is not a Connector's root, or the
Connector refuses the API key, check stops with one sentence saying so and
exits 1, without a report.

The API key comes from --api-key-file, --api-key or XCONN_API_KEY, as for
"xconn host".

With --xagent it checks the other side instead: it serves a scripted Connector
Server (card im.xagent-check) at --listen and judges the xAgent-side
implementation that connects to it, such as "xconn host" with its echo agent
(sign in with --auth-flow xagent_check_form --auth-input code=ANY). The run
ends when the script ends or on interrupt; --json, --junit, --only, --skip,
--strict and --list work as for a Connector (see conformance/README.md).`,
		Example: `  xconn check http://127.0.0.1:8080 --api-key "$KEY"
  xconn check http://127.0.0.1:8080 --auth-flow webchat_room --auth-input room=lobby --auth-input access_code=1234
  xconn check http://127.0.0.1:8080 --auth-flow webchat_room --auth-input room=lobby --auth-input access_code=1234 \
      --tool webchat_message_send --tool-args '{"text":"conformance test"}'
  xconn check http://127.0.0.1:8090 --auth-flow room_login --auth-input room=r1 --auth-input access_code=c0de-c0de \
      --inbound-cmd 'curl -sf -d "{\"text\":\"$XCONN_INBOUND_TEXT\"}" "$XCONN_BASE_URL/room/r1/say"'
  xconn check http://127.0.0.1:8080 --only 'imv2.*' --junit report.xml
  xconn check --list --markdown
  xconn check --xagent --listen 127.0.0.1:8099 --api-key "$KEY"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if xagentMode {
				if len(args) > 0 {
					return usageError(errors.New("--xagent takes no BASE_URL: the xAgent under test connects to --listen"))
				}
				return nil
			}
			if list {
				if len(args) > 0 {
					return usageError(errors.New("--list takes no BASE_URL"))
				}
				return nil
			}
			if len(args) != 1 {
				return usageError(argsProblem(cmd, args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if md && !list {
				return usageError(errors.New("--markdown needs --list"))
			}
			if xagentMode {
				if inboundCmd != "" {
					return usageError(errors.New("--xagent: --inbound-cmd is an option of the Connector suite"))
				}
				return runCheckXAgent(cmd, opts, &conn, listen, list, md, jsonOut, junitFile)
			}
			reqs, err := conformance.Select(opts.Only, opts.Skip)
			if err != nil {
				return usageError(err)
			}
			out := cmd.OutOrStdout()
			if list {
				if md {
					return conformance.WriteMarkdown(out, reqs)
				}
				return conformance.WriteList(out, reqs)
			}
			opts.APIKey, opts.AuthFlow = conn.key(), conn.flowID
			if len(conn.inputs) > 0 {
				if opts.AuthInput, err = conn.authInputs(); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("invoke") {
				if cmd.Flags().Changed("tool") && opts.Tool != invoke {
					return usageError(errors.New("--invoke and --tool name different tools"))
				}
				opts.Tool = invoke
			}
			if cmd.Flags().Changed("args") {
				if cmd.Flags().Changed("tool-args") && toolArgs != invokeArgs {
					return usageError(errors.New("--args and --tool-args differ"))
				}
				toolArgs = invokeArgs
			}
			if cmd.Flags().Changed("tool-args") || cmd.Flags().Changed("args") {
				if opts.Tool == "" {
					return usageError(errors.New("--tool-args (--args) needs --tool (--invoke)"))
				}
				if !isJSONObject(toolArgs) {
					return usageError(errors.New("--tool-args: want a JSON object, such as '{\"text\":\"hi\"}'"))
				}
				opts.ToolArgs = json.RawMessage(toolArgs)
			}
			if inboundCmd == "" {
				inboundCmd = os.Getenv(envInboundCmd)
			}
			if inboundCmd != "" {
				if opts.AuthFlow == "" {
					return usageError(errors.New("--inbound-cmd needs --auth-flow: the command runs after the sign-in, for the signed-in channel"))
				}
				opts.Inbound = inboundCmdHook(inboundCmd, args[0], cmd.ErrOrStderr())
			}
			opts.Out = cmd.ErrOrStderr()
			// The caller's own mistakes first, in one sentence each, as
			// "xconn host" says them (host_preflight.go).
			if err := connectorPreflight(cmd.Context(), args[0], opts.APIKey, opts.AuthFlow, func(s string) string {
				if opts.APIKey == "" {
					return s
				}
				return strings.ReplaceAll(s, opts.APIKey, "[redacted]")
			}); err != nil {
				if cmd.Context().Err() != nil {
					return &exitError{code: 1, err: errors.New("check interrupted: no report")}
				}
				return err
			}
			rep, err := conformance.Check(cmd.Context(), args[0], opts)
			if err != nil {
				var pe *conformance.PreflightError
				switch {
				case cmd.Context().Err() != nil:
					return &exitError{code: 1, err: errors.New("check interrupted: no report")} // not a usage error
				case errors.As(err, &pe):
					// Nothing listens, or the key is refused: one sentence.
					return &exitError{code: 1, err: pe}
				}
				return usageError(err) // a malformed Base URL
			}
			if jsonOut {
				err = rep.WriteJSON(out)
			} else {
				err = rep.WriteText(out)
			}
			if err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			if junitFile != "" {
				if err := writeJUnit(junitFile, rep); err != nil {
					return err
				}
			}
			if !rep.OK() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	conn.register(f, "Card auth flow id used to sign a channel in (without it, the checks that need a signed-in channel are skipped)")
	f.BoolVar(&opts.AuthOpenURL, "auth-open-url", false, "confirm a QR flow by fetching and POSTing its qr_code_text URL")
	f.StringVar(&opts.Tool, "tool", "", "Card tool `ID` that tool.invoke may invoke once on the signed-in channel (without it tool.invoke is skipped)")
	f.StringVar(&toolArgs, "tool-args", "", "arguments of --tool as a `JSON` object; connector_channel_id is filled in (default {})")
	f.StringVar(&invoke, "invoke", "", "same as --tool: the side-effecting Card tool `TOOL` to invoke")
	f.StringVar(&invokeArgs, "args", "", "same as --tool-args: the arguments of --invoke as a `JSON` object")
	f.DurationVar(&opts.QRWait, "qr-wait", conformance.DefaultQRWait, "how long to wait for a QR scan")
	f.BoolVar(&jsonOut, "json", false, "print the report as JSON instead of text")
	f.StringVar(&junitFile, "junit", "", "also write a JUnit XML report to `FILE`")
	f.BoolVar(&list, "list", false, "list the requirements without touching the network")
	f.BoolVar(&md, "markdown", false, "with --list: print Markdown tables by section")
	f.StringArrayVar(&opts.Only, "only", nil, "run only requirement IDs matching this pattern (repeatable, e.g. 'card.*')")
	f.StringArrayVar(&opts.Skip, "skip", nil, "skip requirement IDs matching this pattern (repeatable)")
	f.BoolVar(&opts.Strict, "strict", false, "make SHOULD failures fail the run")
	f.DurationVar(&opts.Timeout, "timeout", conformance.DefaultTimeout, "how long to wait for each answer")
	f.StringVar(&inboundCmd, "inbound-cmd", "", "shell `CMD` that makes the target send one message to the signed-in channel (env XCONN_CHANNEL_ID, XCONN_BASE_URL, XCONN_INBOUND_TEXT, XCONN_INBOUND_SEQ); runs the inbound checks (default $XCONN_INBOUND_CMD)")
	f.BoolVar(&xagentMode, "xagent", false, "check an xAgent-side implementation instead: serve a scripted Connector Server at --listen for it to connect to")
	f.StringVar(&listen, "listen", "127.0.0.1:8099", "with --xagent: `ADDR` the scripted Connector Server listens on")
	f.String("other-origin", "", "with --xagent: another `ORIGIN` (scheme://host[:port]) at which the xAgent reaches the scripted server, for the signed URL of xagent.download-other-origin (default: the loopback alias of the host it used, 127.0.0.1 or localhost)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	return cmd
}

// isJSONObject reports whether s is one JSON object.
func isJSONObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

// usageError wraps err as exit code 2.
func usageError(err error) error { return &exitError{code: 2, err: err} }

func writeJUnit(path string, rep *conformance.Report) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("junit report: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("junit report: %w", cerr)
		}
	}()
	return rep.WriteJUnit(f)
}

// runCheckXAgent runs "xconn check --xagent": it serves the scripted
// Connector Server of package conformance/xagent at listen until its script
// ends (or the command is interrupted) and prints the report as the
// Connector suite does. --timeout bounds each wait for the xAgent (at least
// the package default).
func runCheckXAgent(cmd *cobra.Command, opts conformance.Options, conn *connectorFlags, listen string, list, md, jsonOut bool, junitFile string) error {
	out := cmd.OutOrStdout()
	if list {
		reqs, err := xagent.Select(opts.Only, opts.Skip)
		if err != nil {
			return usageError(err)
		}
		if md {
			return xagent.WriteMarkdown(out, reqs)
		}
		return conformance.WriteList(out, reqs)
	}
	if md {
		return usageError(errors.New("--markdown needs --list"))
	}
	if conn.flowID != "" || opts.Tool != "" || len(conn.inputs) > 0 {
		return usageError(errors.New("--xagent: --auth-flow, --auth-input and --tool are options of the Connector suite"))
	}
	opts.APIKey = conn.key()
	other, _ := cmd.Flags().GetString("other-origin")
	xopts := xagent.Options{APIKey: opts.APIKey, Only: opts.Only, Skip: opts.Skip, Strict: opts.Strict, OtherOrigin: other}
	if err := xopts.Validate(); err != nil {
		return usageError(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("--listen: %w", err)}
	}
	errOut := cmd.ErrOrStderr()
	base := "http://" + ln.Addr().String()
	keyFlag := ""
	if opts.APIKey != "" {
		keyFlag = " --api-key \"$XCONN_API_KEY\""
	}
	// --allow-private-downloads: the file of M4 is on another origin of
	// this server, on a private address when it listens on one.
	fmt.Fprintf(errOut, "scripted Connector Server at %s; point the xAgent under test at it, e.g.\n  xconn host %s%s --auth-flow %s --auth-input code=1234 --allow-private-downloads\n",
		base, base, keyFlag, xagent.FormFlow)
	xopts.Timeout, xopts.Out = max(opts.Timeout, xagent.DefaultTimeout), errOut
	rep, err := xagent.Check(cmd.Context(), ln, xopts)
	if err != nil && rep == nil {
		return &exitError{code: 1, err: err}
	}
	if jsonOut {
		err = rep.WriteJSON(out)
	} else {
		err = rep.WriteText(out)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if junitFile != "" {
		if err := writeJUnit(junitFile, rep); err != nil {
			return err
		}
	}
	if !rep.OK() {
		return &exitError{code: 1}
	}
	return nil
}
