// Command xconn runs xAgent connectors, an embedded xAgent host for trying
// them, the conformance suite and the validators of the xAgent Connector
// protocol 3.0. Run "xconn help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the CLI with args and returns the process exit code: 0 on
// success, 1 when the command ran and found a failure, 2 on usage errors.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	code := 2 // cobra's own errors are usage errors
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	switch {
	case err == nil:
	case code == 2:
		fmt.Fprintln(stderr, usageLine(cmd, err))
	default:
		fmt.Fprintln(stderr, "xconn:", err)
	}
	return code
}
