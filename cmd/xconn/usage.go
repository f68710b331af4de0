package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// strictUsage makes every usage mistake of c and its subcommands an error
// that exits 2: a command group run without a subcommand or with an
// unknown one (cobra would print help and exit 0), missing or extra
// arguments, unknown or malformed flags. run prints each in one shape (see
// usageLine).
func strictUsage(c *cobra.Command) {
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError(flagProblem(cmd, err)) })
	switch {
	case c.HasSubCommands() && c.RunE == nil && c.Run == nil:
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(fmt.Errorf("missing subcommand: one of %s", strings.Join(subcommandNames(cmd), ", ")))
			}
			msg := fmt.Sprintf("unknown subcommand %q", args[0])
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			} else {
				msg += " (one of " + strings.Join(subcommandNames(cmd), ", ") + ")"
			}
			return usageError(errors.New(msg))
		}
	case c.Args != nil:
		orig := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := orig(cmd, args)
			var ee *exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return usageError(argsProblem(cmd, args))
		}
	}
	for _, sub := range c.Commands() {
		strictUsage(sub)
	}
}

// flagProblem adds to an unknown flag's error the flag of cmd it was
// probably meant to be, as an unknown subcommand gets its "did you mean".
func flagProblem(cmd *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	typed := ne.GetSpecifiedName()
	best, bestD := "", 3 // at most 2 edits away, or a prefix
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(typed, f.Name)
		if len(typed) >= 3 && strings.HasPrefix(f.Name, typed) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && best != "" && f.Name < best) {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// subcommandNames lists the visible subcommands of c.
func subcommandNames(c *cobra.Command) []string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return names
}

// argsProblem names what is wrong with args given the placeholders of
// cmd's Use line ("host BASE_URL": one argument, BASE_URL).
func argsProblem(cmd *cobra.Command, args []string) error {
	var want []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(w, "-") {
			break
		}
		if w == strings.ToUpper(w) {
			want = append(want, strings.Trim(w, "[]."))
		}
	}
	if len(args) < len(want) {
		return fmt.Errorf("missing %s", want[len(args)])
	}
	if len(want) < len(args) {
		return fmt.Errorf("unexpected argument %q", args[len(want)])
	}
	return fmt.Errorf("wrong arguments %q", args)
}

// usageLine is the one shape of every usage error:
//
//	xconn serve: unknown subcommand "webchatt" (did you mean "webchat"?); see 'xconn serve --help'
func usageLine(cmd *cobra.Command, err error) string {
	path := "xconn"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	msg := strings.TrimPrefix(err.Error(), path+": ")
	return fmt.Sprintf("%s: %s; see '%s --help'", path, msg, path)
}
