// Command codemode is an MCP server with one tool, run_python, that runs
// Python in a hardened sandbox. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/term"

	"github.com/codemode/codemode/internal/cli"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/linuxns"
)

const gcPercent = 400

func main() {
	// The binary re-executes itself as the native sandbox's init.
	if linuxns.IsInit() {
		os.Exit(linuxns.InitMain())
	}
	// A proxied tool call allocates ~100 KiB on the host, most of it in the
	// MCP SDK's JSON decoding, so with the default target a collection
	// runs every few dozen calls and competes with the call path for the
	// CPU: a higher target trades a few MiB of heap for far fewer of them
	// (bench: section 6). GOGC, when set, wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	// While this process holds its owner lock, other codemodes leave the
	// containers and directories it labels alone.
	owner, err := sandbox.ClaimOwner()
	if err != nil {
		fmt.Fprintf(os.Stderr, "codemode: %v: codemodes that cannot see this one in /proc may take its containers for leftovers\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	var self []string
	if exe, err := os.Executable(); err == nil {
		self = append(self, exe)
	}
	code := cli.Run(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Environ: os.Environ(), Home: home, Cwd: cwd, Self: self, Interactive: term.IsTerminal(int(os.Stdin.Fd()))})
	stop()
	if owner != nil {
		owner.Release()
	}
	os.Exit(code)
}
