package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/codemode/codemode/internal/policy"
)

// policyCmd is `codemode policy init|check|explain`.
func policyCmd(ctx context.Context, args []string, sio IO) (int, error) {
	if len(args) == 0 {
		return 2, usageError{errors.New("usage: codemode policy init [FILE] | check FILE | explain FILE --server S --tool T [--args JSON]")}
	}
	switch args[0] {
	case "init":
		return policyInit(args[1:], sio)
	case "check":
		return policyCheck(args[1:], sio)
	case "explain":
		return policyExplain(ctx, args[1:], sio)
	}
	return 2, usageError{fmt.Errorf("unknown policy command %q (want init, check or explain)", args[0])}
}

// policyInit writes the starter policy to FILE (never over an existing
// file), or prints it.
func policyInit(args []string, sio IO) (int, error) {
	if len(args) > 1 {
		return 2, usageError{errors.New("policy init takes at most one file")}
	}
	if len(args) == 0 {
		fmt.Fprint(sio.Stdout, policy.Starter())
		return 0, nil
	}
	f, err := os.OpenFile(args[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 1, fmt.Errorf("writing the starter policy: %w", err)
	}
	if _, err := f.WriteString(policy.Starter()); err != nil {
		f.Close()
		return 1, err
	}
	if err := f.Close(); err != nil {
		return 1, err
	}
	fmt.Fprintf(sio.Stderr, "wrote %s; serve with --policy %s (or CODEMODE_POLICY)\n", args[0], args[0])
	return 0, nil
}

// policyCheck reports every mistake with its line; exit 1 if any.
func policyCheck(args []string, sio IO) (int, error) {
	if len(args) != 1 {
		return 2, usageError{errors.New("usage: codemode policy check FILE")}
	}
	p, err := policy.Load(args[0])
	if err != nil {
		fmt.Fprintln(sio.Stdout, err)
		return 1, nil
	}
	fmt.Fprintf(sio.Stdout, "%s: ok; %s\n", args[0], p.Summary())
	return 0, nil
}

// policyExplain prints the decision for one call and the rule that made it.
func policyExplain(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("policy explain", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	server := fs.String("server", "", "server name (as configured)")
	tool := fs.String("tool", "", "tool name")
	argsJSON := fs.String("args", "{}", "the call's arguments, a JSON object")
	annotations := fs.String("annotations", "", "the tool's annotations, a JSON object (e.g. {\"destructiveHint\":true})")
	principal := fs.String("principal", "default", "who calls: token name or oauth:<subject>")
	session := fs.String("session", "default", "session name")
	if len(args) == 0 {
		return 2, usageError{errors.New("usage: codemode policy explain FILE --server S --tool T [--args JSON]")}
	}
	file := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return 2, usageError{err}
	}
	if *server == "" || *tool == "" {
		return 2, usageError{errors.New("--server and --tool are required")}
	}
	p, err := policy.Load(file)
	if err != nil {
		return 1, err
	}
	in := policy.Input{Server: *server, Tool: *tool, ArgsJSON: []byte(*argsJSON), Principal: *principal, Session: *session}
	var probe map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &probe); err != nil {
		return 2, usageError{fmt.Errorf("--args must be a JSON object: %v", err)}
	}
	if *annotations != "" {
		if err := json.Unmarshal([]byte(*annotations), &in.Annotations); err != nil {
			return 2, usageError{fmt.Errorf("--annotations must be a JSON object: %v", err)}
		}
	}
	d := p.Decide(ctx, in)
	fmt.Fprint(sio.Stdout, p.Explain(d))
	if p.Hidden(*server, *tool) {
		fmt.Fprintln(sio.Stdout, "hidden: the tool is not shown to code (every call to it is denied)")
	}
	return 0, nil
}
