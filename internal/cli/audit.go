package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/codemode/codemode/internal/audit"
)

// auditCmd is `codemode audit verify FILE`: exit 1 on any edited, removed
// or reordered record, naming the first bad line.
func auditCmd(_ context.Context, args []string, sio IO) (int, error) {
	if len(args) == 0 || args[0] != "verify" {
		return 2, usageError{fmt.Errorf("usage: codemode audit verify FILE (checks FILE and its rotated siblings FILE.1, FILE.2, ...)")}
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	if err := fs.Parse(args[1:]); err != nil {
		return 2, usageError{err}
	}
	if fs.NArg() != 1 {
		return 2, usageError{fmt.Errorf("audit verify takes one file, got %d", fs.NArg())}
	}
	rep, err := audit.VerifyFile(fs.Arg(0))
	if err != nil {
		return 1, err
	}
	fmt.Fprintln(sio.Stdout, rep.String())
	if !rep.OK() {
		return 1, nil
	}
	return 0, nil
}
