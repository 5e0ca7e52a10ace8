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
		return nil, err
	}
	cmd := exec.Command(node, script, nodeModules)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &tokenizer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if n, err := t.count("hello world"); err != nil || n != 2 {
		t.close()
		return nil, fmt.Errorf("tokenizer self-test: count(\"hello world\") = %d, %v", n, err)
	}
	return t, nil
}

func (t *tokenizer) count(s string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	line, _ := json.Marshal(s)
	if _, err := t.in.Write(append(line, '\n')); err != nil {
		return 0, err
	}
	resp, err := t.out.ReadString('\n')
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(resp))
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
