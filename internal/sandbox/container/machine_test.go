package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakePodman writes a podman stand-in that behaves like macOS podman with a
// stopped machine, and logs every command line it gets.
func fakePodman(t *testing.T, machines string) (cmd, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "argv.log")
	state := filepath.Join(dir, "running")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
while [ "${1#--}" != "$1" ]; do shift 2; done
case "$1 $2" in
"machine list") printf '` + machines + `' ;;
"machine start") touch ` + state + ` ;;
"machine stop") rm -f ` + state + ` ;;
"info --format")
  if [ -f ` + state + ` ]; then echo '{"host":{"cgroupVersion":"v2","ociRuntime":{"name":"crun"},"security":{"rootless":true},"serviceIsRemote":true},"version":{"Version":"5.0.0"}}'
  else echo 'Cannot connect to Podman. Please verify your connection to the Linux system using podman system connection list, or try podman machine init and podman machine start' >&2; exit 125; fi ;;
*) exit 0 ;;
esac
`
	cmd = filepath.Join(dir, "podman")
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return cmd, log
}

func TestPodmanMachineStartedLazilyAndStoppedOnlyIfOurs(t *testing.T) {
	cmd, log := fakePodman(t, `podman-machine-default*\tfalse\n`)
	b := New(&Options{Name: "podman", Command: []string{cmd}, StateDir: t.TempDir()})
	e, err := b.resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.info(context.Background()); err == nil || !needsMachine(err) {
		t.Fatalf("stopped machine not recognised: %v", err)
	}
	if err := b.startMachine(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if info, err := e.info(context.Background()); err != nil || !info.Machine {
		t.Fatalf("info after start = %+v, %v", info, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(log)
	calls := strings.TrimSpace(string(data))
	for _, want := range []string{"machine list --format", "machine start podman-machine-default", "machine stop podman-machine-default"} {
		if !strings.Contains(calls, want) {
			t.Errorf("missing %q in:\n%s", want, calls)
		}
	}
	if strings.Contains(calls, "rootful") || strings.Contains(calls, "machine set") {
		t.Errorf("codemode changed the machine's settings:\n%s", calls)
	}
}

func TestPodmanMachineOfSomeoneElseIsNotStopped(t *testing.T) {
	cmd, log := fakePodman(t, `busy\ttrue\n`)
	b := New(&Options{Name: "podman", Command: []string{cmd}, StateDir: t.TempDir()})
	e, _ := b.resolve(context.Background())
	if err := b.startMachine(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, _ := os.ReadFile(log)
	if strings.Contains(string(data), "machine start") || strings.Contains(string(data), "machine stop") {
		t.Fatalf("touched a running machine it did not start:\n%s", data)
	}
}

func TestNoMachineIsNotCreated(t *testing.T) {
	cmd, log := fakePodman(t, ``)
	b := New(&Options{Name: "podman", Command: []string{cmd}, StateDir: t.TempDir()})
	e, _ := b.resolve(context.Background())
	if err := b.startMachine(context.Background(), e); err == nil || !strings.Contains(err.Error(), "podman machine init") {
		t.Fatalf("no machine: %v", err)
	}
	data, _ := os.ReadFile(log)
	if strings.Contains(string(data), "machine init") {
		t.Fatalf("codemode created a machine:\n%s", data)
	}
}
