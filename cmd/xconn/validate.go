package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/xconn/xconn/protocol"
)

// newValidateCmd builds "xconn validate": offline validation of Cards,
// Descriptors and packets. Exit codes: 0 valid, 1 invalid (one line per
// violation, "path: reason"), 2 usage errors (including unreadable files).
func newValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Validate a Card, a Descriptor or a packet against protocol 3.0",
		Long: `Validate checks a document against the official JSON Schemas and every hard rule
of the xAgent Connector protocol 3.0. FILE may be "-" for standard input.

Exit status: 0 when valid, 1 when invalid (one line per violation: "path: reason"),
2 on usage errors.`,
	}
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print the violations as a JSON array")

	card := &cobra.Command{
		Use:   "card FILE",
		Short: "Validate a Connector Card",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			_, vs := protocol.ValidateCardJSON(data)
			return reportViolations(cmd.OutOrStdout(), vs, asJSON)
		},
	}

	var cardFile, descFrom string
	desc := &cobra.Command{
		Use:   "descriptor FILE --card CARD",
		Short: "Validate a Connection Descriptor, cross-checked against a Card",
		Long: `Validate a Connection Descriptor against the official schema, the rules of
section 9 and the Card. By default it is judged as a 3.0 Connector's output: a
legacy xagent.connection/v1 Descriptor is reported, since a 3.0 Connector must
not emit one (section 12). With --from host it is judged as xAgent reads it: a
v1 Descriptor is normalised (its singular profile becomes profiles) and then
validated.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cardFile == "" {
				return &exitError{code: 2, err: fmt.Errorf("validate descriptor: --card is required")}
			}
			cardData, err := readInput(cmd, cardFile)
			if err != nil {
				return err
			}
			c, cvs := protocol.ValidateCardJSON(cardData)
			if c == nil {
				return &exitError{code: 2, err: fmt.Errorf("validate descriptor: --card %s does not decode: %v", cardFile, cvs)}
			}
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			var vs protocol.Violations
			switch descFrom {
			case "", "connector":
				// Section 12: a 3.0 Connector does not emit a legacy
				// Descriptor; xAgent would normalise it, so that is the
				// only finding about it.
				if legacyDescriptor(data) {
					vs = append(vs, protocol.Violation{Path: "schema",
						Reason: protocol.DescriptorSchemaV1 + " is a legacy Descriptor that a 3.0 Connector must not emit (section 12); xAgent normalises it on read (validate it with --from host)"})
				}
			case "host", "xagent":
			default:
				return &exitError{code: 2, err: fmt.Errorf(`--from must be "host" or "connector", not %q`, descFrom)}
			}
			_, rules := protocol.ValidateDescriptorJSON(data, c)
			vs = append(vs, rules...)
			return reportViolations(cmd.OutOrStdout(), vs, asJSON)
		},
	}
	desc.Flags().StringVar(&cardFile, "card", "", "the Connector Card to cross-validate against (required)")
	desc.Flags().StringVar(&descFrom, "from", "", `who judges the Descriptor: "connector" (default: a 3.0 Connector emits only xagent.connection/v2) or "host" (xAgent accepts a v1 Descriptor after normalising it)`)

	var from string
	packet := &cobra.Command{
		Use:   "packet FILE",
		Short: "Validate a data-plane packet (envelope and payload)",
		Long: `Validate one packet. --from says who sent it ("host" for xAgent, "connector");
by default the direction comes from the packet type, and a bidirectional type
(chat.message, chat.message.ack, ping, pong, error) is taken as sent by the host.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			dir, err := packetDirection(data, from)
			if err != nil {
				return err
			}
			_, vs := protocol.ValidatePacketJSON(data, dir)
			return reportViolations(cmd.OutOrStdout(), vs, asJSON)
		},
	}
	packet.Flags().StringVar(&from, "from", "", `sender of the packet: "host" or "connector" (default: from the packet type)`)

	cmd.AddCommand(card, desc, packet)
	return cmd
}

// exactArgs is cobra.ExactArgs with exit code 2.
func exactArgs(n int) cobra.PositionalArgs { return cobra.ExactArgs(n) } // strictUsage words the error

// readInput reads FILE, or standard input for "-". Failures are usage errors.
func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<20))
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("read %s: %w", name, err)}
	}
	return data, nil
}

func packetDirection(data []byte, from string) (protocol.Direction, error) {
	switch from {
	case "host", "xagent":
		return protocol.ToConnector, nil
	case "connector":
		return protocol.ToHost, nil
	case "":
	default:
		return 0, &exitError{code: 2, err: fmt.Errorf(`--from must be "host" or "connector", not %q`, from)}
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &head) // a malformed packet is reported by the validator
	if spec, ok := protocol.LookupPacket(head.Type); ok && spec.Direction == protocol.ToHost {
		return protocol.ToHost, nil
	}
	return protocol.ToConnector, nil
}

// reportViolations prints vs and returns exit code 1 when there are any.
func reportViolations(w io.Writer, vs protocol.Violations, asJSON bool) error {
	if asJSON {
		out := vs
		if out == nil {
			out = protocol.Violations{}
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	} else {
		for _, v := range vs {
			path := v.Path
			if path == "" {
				path = "."
			}
			fmt.Fprintf(w, "%s: %s\n", path, v.Reason)
		}
	}
	if len(vs) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// legacyDescriptor reports whether data is a Descriptor of schema
// xagent.connection/v1.
func legacyDescriptor(data []byte) bool {
	var peek struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(data, &peek) == nil && peek.Schema == protocol.DescriptorSchemaV1
}
