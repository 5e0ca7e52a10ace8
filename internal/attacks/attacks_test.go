package attacks_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/attacks"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestCorpus(t *testing.T) {
	corpus, err := attacks.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	if len(corpus) < 40 {
		t.Errorf("corpus has %d attacks, want at least 40", len(corpus))
	}
	byCategory := map[string]int{}
	names := map[string]bool{}
	for _, a := range corpus {
		byCategory[a.Category]++
		names[a.Name] = true
		// An attack that ends in the sandbox's death or a timeout is judged
		// by the host; every other one must print its verdict.
		if !strings.Contains(a.Source, "done()") && !a.Has("died-ok") && !a.Has("timeout") {
			t.Errorf("%s never calls done() and is not judged by the host", a.File)
		}
	}
	for _, c := range attacks.Categories {
		if byCategory[c] == 0 {
			t.Errorf("no attack in category %s", c)
		}
	}
	// What the suite promises to cover, by attack name.
	for _, want := range []string{"ns-unshare-user", "ns-setns", "ns-clone-flags", "ns-clone3", "ptrace-traceme-fork",
		"mount-tmpfs", "mount-umount", "mount-chroot", "mount-pivot-root", "kernel-bpf", "kernel-perf", "kernel-io-uring",
		"kernel-keyctl", "kernel-userfaultfd", "kernel-modules", "kernel-kexec-reboot", "procfs-sys-write", "sysfs-write",
		"procfs-pid1-root", "procfs-self-exe", "devices-mem", "devices-kmsg", "net-tcp-loopback", "net-udp-loopback",
		"net-raw-packet", "net-netlink", "net-abstract-unix", "net-dns", "host-shadow", "host-home", "host-ssh-keys",
		"host-state-dir", "host-config", "host-env", "other-session-files", "other-session-memory", "links-hardlink",
		"links-out-symlink", "links-data-dir", "res-fork-bomb", "res-memory-bomb", "res-tmpfs-fill", "res-huge-output",
		"res-cpu-quota", "res-sleep-timeout", "res-signals", "proto-fd-frames", "proto-close-channel", "proto-output-flood",
		"proto-impersonate", "proto-kill-threads", "net-egress-bypass", "net-egress-smuggle", "net-egress-ca-key", "net-egress-echo"} {
		if !names[want] {
			t.Errorf("attack %s is missing from the corpus", want)
		}
	}
}

func TestWriteTableGolden(t *testing.T) {
	results := []attacks.Result{
		{Attack: "ns-unshare-user", Category: "namespaces", Backend: "native", Verdict: attacks.Blocked, How: "seccomp EPERM"},
		{Attack: "ns-unshare-user", Category: "namespaces", Backend: "gvisor", Verdict: attacks.Contained, How: "the sentry's own user namespace"},
		{Attack: "net-tcp-loopback", Category: "network", Backend: "native", Verdict: attacks.Escaped, How: "the host's listeners saw 1 connections | datagrams"},
		{Attack: "kernel-bpf", Category: "kernel", Backend: "native", Verdict: attacks.Failed, How: "no verdict (status error: boom)"},
		{Attack: "kernel-bpf", Category: "kernel", Backend: "gvisor", Verdict: attacks.Blocked, How: strings.Repeat("long explanation ", 10)},
	}
	var buf bytes.Buffer
	attacks.WriteTable(&buf, results, 60)
	golden := filepath.Join("testdata", "table.golden.md")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("table differs from %s (run with -update):\n%s", golden, got)
	}
	esc := attacks.Escapes(results)
	if len(esc) != 2 || esc[0].Verdict != attacks.Escaped || esc[1].Verdict != attacks.Failed {
		t.Errorf("Escapes = %+v, want the escape then the error", esc)
	}
}

// TestAttacks runs the whole corpus on every backend through codemode's
// real call path and fails on any escape (or any attack it cannot judge).
// It also checks that the suite leaves nothing behind on the host.
// CODEMODE_ATTACKS=name,... runs only those attacks. Under -short (the
// whole corpus takes a minute per backend) it runs a smoke set on the
// native backend: a quick attack or two of each category.
func TestAttacks(t *testing.T) {
	corpus, err := attacks.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var only []string
	if names := os.Getenv("CODEMODE_ATTACKS"); names != "" {
		only = strings.Split(names, ",")
	} else if testing.Short() {
		only = []string{"ns-unshare-user", "ptrace-attach", "mount-tmpfs", "kernel-bpf", "procfs-pid1-root", "devices-mem",
			"net-tcp-loopback", "host-shadow", "other-session-files", "links-out-symlink", "res-kill-all", "proto-fd-frames"}
		t.Logf("-short runs %d of %d attacks on the native backend; %s runs all of them on every backend", len(only), len(corpus), testenv.FullSuite)
	}
	if only != nil {
		corpus = slices.DeleteFunc(corpus, func(a attacks.Attack) bool { return !slices.Contains(only, a.Name) })
		for _, name := range only {
			if !slices.ContainsFunc(corpus, func(a attacks.Attack) bool { return a.Name == name }) {
				t.Fatalf("no attack %s in the corpus", name)
			}
		}
	}
	// A private TMPDIR: the leak check counts temp dirs, and other test
	// packages running next to this one make their own in the shared one.
	// It must be searchable by others: the fixtures' data directory in it is
	// mounted into sandboxes, whose user is not root.
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	var all []attacks.Result
	for _, b := range []string{"native", "podman", "docker", "gvisor", "kubernetes"} {
		t.Run(b, func(t *testing.T) {
			if b != "native" {
				testenv.Slow(t, "the attack corpus on "+b)
			}
			s, environ, engines := backendSettings(t, b)
			before := testenv.HostResources(t, engines...)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			var log bytes.Buffer
			results, err := attacks.Run(ctx, attacks.Options{Settings: s, Environ: environ, Attacks: corpus, Log: &log,
				OnResult: func(r attacks.Result) {
					t.Logf("%-24s %-9s %6s  %s", r.Attack, r.Verdict, r.Duration.Round(10*time.Millisecond), r.How)
				}})
			if err != nil {
				t.Fatalf("suite did not run: %v\ncodemode log:\n%s", err, tail(log.String(), 4000))
			}
			for _, r := range attacks.Escapes(results) {
				t.Errorf("%s on %s: %s: %s", r.Attack, b, r.Verdict, r.How)
			}
			if len(attacks.Escapes(results)) > 0 {
				t.Logf("codemode log:\n%s", tail(log.String(), 6000))
			}
			testenv.CheckNoLeaks(t, before, engines...)
			if b == "kubernetes" {
				checkNoPods(t, s)
			}
			all = append(all, results...)
		})
	}
	var table bytes.Buffer
	attacks.WriteTable(&table, all, 90)
	t.Logf("results:\n%s", table.String())
}

// backendSettings are codemode's default settings pointed at the test
// setup's backend b, its environment, and the container engines whose
// containers the leak check counts.
func backendSettings(t *testing.T, b string) (settings.Settings, []string, [][]string) {
	t.Helper()
	environ := os.Environ()
	var engines [][]string
	flags := map[string]string{"backend": b}
	switch b {
	case "native":
		testenv.NativePython(t)
	case "podman", "gvisor":
		podman := testenv.Podman(t)
		engines = append(engines, podman)
		flags["runtime"], flags["image"] = podman[0], testenv.Image(t)
		flags["oci-runtime"] = "runc"
		if i := slices.Index(podman, "--runtime"); i >= 0 && i+1 < len(podman) {
			flags["oci-runtime"] = podman[i+1]
		}
		if b == "gvisor" {
			flags["oci-runtime"] = testenv.Runsc(t)
		}
	case "kubernetes":
		k := testenv.Cluster(t)
		ns := fmt.Sprintf("cm-attacks-%d", time.Now().UnixNano()%1e6)
		kubectl(t, k, "create", "namespace", ns)
		t.Cleanup(func() { kubectl(t, k, "delete", "namespace", ns, "--wait=false") })
		flags["kubeconfig"], flags["image"], flags["namespace"] = k.Kubeconfig, k.Image, ns
	case "docker":
		docker := testenv.Docker(t)
		engines = append(engines, docker)
		flags["runtime"], flags["image"] = docker[0], testenv.Image(t)
		if i := slices.Index(docker, "-H"); i >= 0 && i+1 < len(docker) {
			environ = append(environ, "DOCKER_HOST="+docker[i+1])
		}
	}
	s, _, err := app.SettingsRegistry().Load(flags, settings.EnvFromList(environ, os.Getenv("HOME")))
	if err != nil {
		t.Fatal(err)
	}
	return s, environ, engines
}

func kubectl(t *testing.T, k testenv.Kube, args ...string) string {
	t.Helper()
	out, err := exec.Command(k.Kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
	return string(out)
}

// checkNoPods: the suite leaves no sandbox Pod behind.
func checkNoPods(t *testing.T, s settings.Settings) {
	k := testenv.Cluster(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := strings.TrimSpace(kubectl(t, k, "get", "pods", "-n", s.KubeNamespace, "-l", "app.kubernetes.io/managed-by=codemode", "-o", "name"))
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("sandbox Pods left behind: %s", left)
			return
		}
		time.Sleep(time.Second)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// FuzzParseHeader: a header either fails to parse or yields an attack the
// runner can use (a name, a known category, an expectation).
func FuzzParseHeader(f *testing.F) {
	corpus, err := attacks.Corpus()
	if err != nil {
		f.Fatal(err)
	}
	for _, a := range corpus[:5] {
		f.Add(a.Source)
	}
	f.Add("# attack: x\n# category: kernel\n# expect: blocked: y\n# timeout: 0\n")
	f.Add("# attack: x\n# category: nope\n")
	f.Fuzz(func(t *testing.T, src string) {
		a, err := attacks.ParseAttack("fuzz.py", src)
		if err != nil {
			return
		}
		if a.Name == "" || !slices.Contains(attacks.Categories, a.Category) || !strings.HasPrefix(a.Expect, "blocked") || a.Timeout < time.Second {
			t.Fatalf("accepted an unusable attack: %+v", a)
		}
	})
}
