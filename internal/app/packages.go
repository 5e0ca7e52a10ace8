package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/settings"
)

// listDistributions prints the importable distributions as JSON pairs.
const listDistributions = `
import importlib.metadata as m, json
seen = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if name and name.lower() not in seen:
        seen[name.lower()] = (name, d.version)
print(json.dumps(sorted(seen.values(), key=lambda p: p[0].lower())))
`

// packageList learns, once and in the background, which Python packages a
// session can import, so the manual can say so and the model need not find
// out by failing.
type packageList struct {
	line atomic.Pointer[string]
}

func (p *packageList) get() string {
	if l := p.line.Load(); l != nil {
		return *l
	}
	return ""
}

// probe runs the listing in a throw-away sandbox of the backend sessions use.
func (p *packageList) probe(ctx context.Context, b sandbox.Backend, s settings.Settings) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sb, err := b.Start(ctx, sandbox.Spec{ID: "packages-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Command: []string{s.Python, "-c", listDistributions}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		Limits: sandboxLimits(s)})
	if err != nil {
		return fmt.Errorf("listing Python packages: %w", err)
	}
	defer sb.Kill(context.Background())
	// Reading its output does not watch ctx: killing it ends the read.
	defer context.AfterFunc(ctx, func() { sb.Kill(context.Background()) })()
	sb.Stdin().Close()
	go io.Copy(io.Discard, sb.Stderr())
	out, err := io.ReadAll(io.LimitReader(sb.Stdout(), 1<<20))
	if err != nil {
		return fmt.Errorf("listing Python packages: %w", err)
	}
	if exit, err := sb.Wait(ctx); err != nil || exit.Code != 0 {
		return fmt.Errorf("listing Python packages: %v %v", exit, err)
	}
	line, err := formatPackages(out)
	if err != nil {
		return err
	}
	p.line.Store(&line)
	return nil
}

// formatPackages turns [["numpy","1.24.2"], ...] into "numpy 1.24.2, ...".
func formatPackages(out []byte) (string, error) {
	var pairs [][2]string
	if err := json.Unmarshal(bytes.TrimSpace(out), &pairs); err != nil {
		return "", fmt.Errorf("listing Python packages: %w", err)
	}
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p[0] + " " + p[1]
	}
	if len(parts) == 0 {
		return "none beyond the standard library", nil
	}
	return strings.Join(parts, ", "), nil
}
