package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// strictUsage makes every usage mistake of c and its subcommands an error
// that exits 2: a command group run without a subcommand or with an
// unknown one (cobra would print help and exit 0), missing or extra
// arguments, unknown or malformed flags. run prints each in one shape (see
// usageLine).
func strictUsage(c *cobra.Command) {
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
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
