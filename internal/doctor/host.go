package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
)

// HaltPollPath is where a KVM guest's kernel says how long an idle vCPU
// polls for work before it halts.
const HaltPollPath = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"

// Host checks what on this machine sets the cost of a tool call made from
// code beyond the sandbox: such a call passes the sandbox's interpreter,
// codemode and the server, waking a process at each hop, where a client
// calling the server directly wakes two. haltPoll is HaltPollPath (a
// parameter for tests).
func Host(ctx context.Context, haltPoll string) []sandbox.Check {
	var out []sandbox.Check
	if rt, err := processRoundTrip(ctx, 200); err != nil {
		out = append(out, sandbox.Check{Name: "process wake-up", OK: false, Detail: "could not measure: " + err.Error()})
	} else {
		out = append(out, sandbox.Check{Name: "process wake-up", OK: true,
			Detail: fmt.Sprintf("a round trip through another process takes %s (p50 of 200): a tool call from code makes two more of them than a client calling the server directly", rt.Round(time.Microsecond))})
	}
	if c, ok := haltPolling(haltPoll); ok {
		out = append(out, c)
	}
	return out
}

// haltPolling reports a KVM guest's halt polling, if this is one.
func haltPolling(path string) (sandbox.Check, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return sandbox.Check{}, false
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return sandbox.Check{}, false
	}
	if ns > 0 {
		return sandbox.Check{Name: "guest halt polling", OK: true, Detail: fmt.Sprintf("an idle vCPU polls for work up to %s before it halts", time.Duration(ns))}, true
	}
	return sandbox.Check{Name: "guest halt polling", OK: false,
		Detail: "off: an idle vCPU halts at once, and a process woken on it waits for the hypervisor to run the vCPU again; a tool call from code wakes four processes where a client calling the server directly wakes two (BENCHMARKS.md, \"The floor, and this machine\")",
		Fix:    "as root: echo 200000 > " + path + " (the kernel's default; or boot with haltpoll.guest_halt_poll_ns=200000)"}, true
}

// processRoundTrip is the p50 of n one-byte round trips through cat: two
// process wake-ups each.
func processRoundTrip(ctx context.Context, n int) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Wait()
	defer in.Close()
	b := []byte{'x'}
	var durs []time.Duration
	for i := range n + 20 {
		t0 := time.Now()
		if _, err := in.Write(b); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(out, b); err != nil {
			return 0, err
		}
		if i >= 20 { // after a warm-up
			durs = append(durs, time.Since(t0))
		}
	}
	slices.Sort(durs)
	return durs[len(durs)/2], nil
}
