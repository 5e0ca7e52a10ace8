// Package attacks is codemode's adversarial suite: real attack programs
// (Python, some dropping to ctypes and raw syscalls) that try to get out of
// the sandbox, take the host down or make codemode lose track of something,
// run through the real call path (executor.Manager.Run, one fresh session
// per attack) on a chosen backend, with host-side checks wherever the
// program's own word is not enough.
//
// The corpus lives in corpus/*.py (embedded). Each program starts with a
// header of "# key: value" lines:
//
//	attack    unique name
//	category  namespaces, ptrace, mount, kernel, procfs, devices, network,
//	          host-data, links, resources or protocol
//	expect    the expected outcome and what should stop it
//	gvisor    "contained: why" when success inside gVisor's user-space kernel
//	          is not an escape (the per-backend exception, explicit)
//	needs     host fixtures beyond the default: victim, upstream, data-dir
//	check     host-side checks (see checks.go)
//	timeout   the call's timeout in seconds (default 10)
//	parallel  "yes" when the attack may share the sandbox host with others
//
// and ends by printing "VERDICT blocked <how>" or "VERDICT escaped <what>"
// (see corpus/_lib.py). Attack code runs only inside sandboxes; the host
// side only plants fixtures and observes.
//
// The package is used by TestAttacks (every backend, leak accounting) and
// by `codemode attacks`, which prints the results table.
package attacks

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed corpus/*.py
var corpus embed.FS

// Categories in table order.
var Categories = []string{"namespaces", "ptrace", "mount", "kernel", "procfs", "devices", "network",
	"host-data", "links", "resources", "protocol"}

// Attack is one program of the corpus.
type Attack struct {
	Name     string
	Category string
	Expect   string   // expected outcome, as the header states it
	Gvisor   string   // "contained: why" if success inside gVisor is not an escape
	Needs    []string // fixtures: victim, upstream, data-dir
	Checks   []string // host-side checks
	Timeout  time.Duration
	Parallel bool
	File     string
	Source   string
}

// Has reports whether the attack asks for check c (a check may carry a
// value, as in "exit=7").
func (a Attack) Has(c string) bool {
	_, ok := a.Check(c)
	return ok
}

// Check returns the value of check c ("" when it has none).
func (a Attack) Check(c string) (string, bool) {
	for _, x := range a.Checks {
		k, v, _ := strings.Cut(x, "=")
		if k == c {
			return v, true
		}
	}
	return "", false
}

// Needs reports whether the attack needs fixture f.
func (a Attack) Need(f string) bool { return slices.Contains(a.Needs, f) }

// Known fixture and check names; the corpus test rejects others.
var (
	knownNeeds  = []string{"victim", "upstream", "data-dir"}
	knownChecks = []string{"listener", "secrets", "sentinels", "timeout", "bounded", "procs", "procs-after",
		"memory", "rss", "output", "log", "died-ok", "exit", "datadir", "statedir", "stopped"}
)

// Corpus returns every attack, in file name order.
func Corpus() ([]Attack, error) {
	entries, err := fs.ReadDir(corpus, "corpus")
	if err != nil {
		return nil, err
	}
	var out []Attack
	seen := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".py") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := corpus.ReadFile(path.Join("corpus", e.Name()))
		if err != nil {
			return nil, err
		}
		a, err := ParseAttack(e.Name(), string(data))
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[a.Name]; dup {
			return nil, fmt.Errorf("%s: attack %q already defined in %s", e.Name(), a.Name, prev)
		}
		seen[a.Name] = e.Name()
		out = append(out, a)
	}
	return out, nil
}

// library is the helper code every attack runs after (corpus/_lib.py).
func library() string {
	data, err := corpus.ReadFile("corpus/_lib.py")
	if err != nil {
		panic(err) // embedded
	}
	return string(data)
}

// ParseAttack reads one attack program's header (see the package comment).
func ParseAttack(file, src string) (Attack, error) {
	a := Attack{File: file, Source: src, Timeout: 10 * time.Second}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "# ") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "# "), ":")
		if !ok || strings.ContainsAny(k, " \t") {
			break // the header ends where prose comments begin
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "attack":
			a.Name = v
		case "category":
			a.Category = v
		case "expect":
			a.Expect = v
		case "gvisor":
			a.Gvisor = v
		case "needs":
			a.Needs = splitList(v)
		case "check":
			a.Checks = splitList(v)
		case "timeout":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return a, fmt.Errorf("%s: bad timeout %q", file, v)
			}
			a.Timeout = time.Duration(n) * time.Second
		case "parallel":
			a.Parallel = v == "yes"
		default:
			return a, fmt.Errorf("%s: unknown header key %q", file, k)
		}
	}
	switch {
	case a.Name == "":
		return a, fmt.Errorf("%s: no attack name", file)
	case !slices.Contains(Categories, a.Category):
		return a, fmt.Errorf("%s: unknown category %q", file, a.Category)
	case !strings.HasPrefix(a.Expect, "blocked"):
		return a, fmt.Errorf("%s: expect must state how the attack is blocked", file)
	case a.Gvisor != "" && !strings.HasPrefix(a.Gvisor, "contained: "):
		return a, fmt.Errorf("%s: gvisor must read \"contained: why\"", file)
	}
	for _, n := range a.Needs {
		if !slices.Contains(knownNeeds, n) {
			return a, fmt.Errorf("%s: unknown fixture %q", file, n)
		}
	}
	for _, c := range a.Checks {
		k, _, _ := strings.Cut(c, "=")
		if !slices.Contains(knownChecks, k) {
			return a, fmt.Errorf("%s: unknown check %q", file, c)
		}
	}
	return a, nil
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "-" {
			out = append(out, f)
		}
	}
	return out
}
