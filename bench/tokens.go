package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

//go:embed tokens.cjs
var tokensScript []byte

// tokenizer counts o200k tokens with gpt-tokenizer in one Node process.
type tokenizer struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func newTokenizer(node, nodeModules, tmp string) (*tokenizer, error) {
	script := filepath.Join(tmp, "tokens.cjs")
	if err := os.WriteFile(script, tokensScript, 0o644); err != nil {
		return nil, fmt.Errorf("writing tokens.cjs: %w", err)
	}
	cmd := exec.Command(node, script, nodeModules)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("tokenizer stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("tokenizer stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node tokens.cjs: %w", err)
	}
	t := &tokenizer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	n, err := t.count("hello world")
	if err == nil && n != 2 {
		err = fmt.Errorf("count(\"hello world\") = %d, want 2 (is gpt-tokenizer's o200k_base loaded?)", n)
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("tokenizer self-test: %w", err)
	}
	return t, nil
}

func (t *tokenizer) count(s string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line, _ := json.Marshal(s)
	if _, err := t.in.Write(append(line, '\n')); err != nil {
		return 0, fmt.Errorf("writing to the tokenizer: %w", err)
	}
	resp, err := t.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("reading from the tokenizer: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(resp))
	if err != nil {
		return 0, fmt.Errorf("decoding the tokenizer's count: %w", err)
	}
	return n, nil
}

// must counts, or ends the run: a count that fails makes every table wrong.
func (t *tokenizer) must(s string) int {
	n, err := t.count(s)
	if err != nil {
		fatalf("counting tokens: %v", err)
	}
	return n
}

func (t *tokenizer) close() {
	t.in.Close()
	t.cmd.Wait()
}
