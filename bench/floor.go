package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The baselines that put a proxied call in proportion: the same echo made
// by a minimal JSON-RPC client (no SDK), and through a bare forwarder, a
// process that does nothing but pass a Python program's requests to the
// server and the answers back. The forwarder has a proxied call's
// processes and pipe hops and none of codemode's work, so it is the floor
// of any proxy on the machine: on a VM where waking an idle vCPU is dear,
// the two extra hops alone cost more than a third of a direct call.

// rawServer is a stdio MCP server driven with hand-written JSON-RPC lines.
type rawServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	next   int
	stop   func()
}

func startRaw(ctx context.Context, cmd *exec.Cmd) (*rawServer, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &rawServer{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20)}
	s.stop = sync.OnceFunc(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	stop := context.AfterFunc(ctx, s.stop)
	defer stop()
	if _, err := s.request(`"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codemode-bench-raw","version":"1"}}`); err != nil {
		s.stop()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// request sends method and params (the JSON after "method":) and returns
// the line that answers it, skipping the server's own messages.
func (s *rawServer) request(methodAndParams string) ([]byte, error) {
	s.next++
	id := strconv.Itoa(s.next)
	if _, err := io.WriteString(s.stdin, `{"jsonrpc":"2.0","id":`+id+`,"method":`+methodAndParams+"}\n"); err != nil {
		return nil, err
	}
	want := []byte(`"id":` + id + `,`)
	wantLast := []byte(`"id":` + id + `}`)
	for {
		line, err := s.stdout.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(line, []byte(`"method"`)) && (bytes.Contains(line, want) || bytes.Contains(line, wantLast)) {
			if bytes.Contains(line, []byte(`"error"`)) {
				return nil, fmt.Errorf("server error: %s", bytes.TrimSpace(line))
			}
			return line, nil
		}
	}
}

const rawEcho = `"tools/call","params":{"name":"echo","arguments":{"message":"x"}}`

// rawEchoP50 is the p50, in µs, of n echo calls by the minimal client.
func (s *rawServer) rawEchoP50(n int) (float64, error) {
	var durs []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := s.request(rawEcho); err != nil {
			return 0, err
		}
		durs = append(durs, time.Since(t0))
	}
	return ms(durs).pct(0.5) * 1000, nil
}

// forwarderScript sends n numbered lines and times each answer (p50 in µs,
// on stderr), as code times a proxied call.
const forwarderScript = `
import json, os, sys, time
n, t = int(sys.argv[1]), []
for i in range(n + 30):
    t0 = time.perf_counter()
    os.write(1, b'%d\n' % i)
    json.loads(os.read(0, 1 << 20))
    if i >= 30:
        t.append(time.perf_counter() - t0)
t.sort()
sys.stderr.write(json.dumps(t[len(t) // 2] * 1e6))
`

// forwardedEchoP50 runs python as the forwarder's client: each line it
// writes becomes an echo call, whose answer line goes back to it.
func (s *rawServer) forwardedEchoP50(ctx context.Context, python string, n int) (float64, error) {
	cmd := exec.CommandContext(ctx, python, "-I", "-c", forwarderScript, strconv.Itoa(n))
	toPy, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	fromPy, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var result strings.Builder
	cmd.Stderr = &result
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	lines := bufio.NewReader(fromPy)
	var forwardErr error
	for {
		if _, err := lines.ReadBytes('\n'); err != nil {
			break // the script is done
		}
		answer, err := s.request(rawEcho)
		if err == nil {
			_, err = toPy.Write(answer)
		}
		if err != nil {
			forwardErr = err
			cmd.Process.Kill()
			break
		}
	}
	toPy.Close()
	if err := errors.Join(forwardErr, cmd.Wait()); err != nil {
		return 0, fmt.Errorf("bare forwarder: %w (%s)", err, result.String())
	}
	return strconv.ParseFloat(strings.TrimSpace(result.String()), 64)
}
