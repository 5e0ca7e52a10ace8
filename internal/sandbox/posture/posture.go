// Package posture checks a sandbox's isolation from the inside: it runs
// posture.py in a sandbox (every probe a real attempt: writes, connects,
// unshare, mount, ptrace, ...) and compares what it saw with what codemode
// promises. The backend suite (sandboxtest) and `codemode doctor` both use it.
package posture

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
)

//go:embed posture.py
var Script string

// Report is what posture.py prints.
type Report struct {
	UID, GID                               []int
	Groups                                 []int
	CapInh, CapPrm, CapEff, CapBnd, CapAmb string
	NoNewPrivs, Seccomp                    string
	WriteRoot                              string `json:"write_root"`
	WriteUsr                               string `json:"write_usr"`
	WriteEtc                               string `json:"write_etc"`
	Tmp, Workspace                         string
	Interfaces                             []string
	ConnectHostLoopback                    string `json:"connect_host_loopback"`
	ConnectInternet                        string `json:"connect_internet"`
	UDPInternet                            string `json:"udp_internet"`
	UnshareUser                            string `json:"unshare_user"`
	UnshareMount                           string `json:"unshare_mount"`
	Mount, Chroot                          string
	PtraceTraceme                          string `json:"ptrace_traceme"`
	BPF                                    string `json:"bpf"`
	Keyctl                                 string
	HostHomeVisible                        bool   `json:"host_home_visible"`
	HomeVisible                            bool   `json:"home_visible"`
	RootVisible                            bool   `json:"root_visible"`
	ShadowReadable                         string `json:"shadow_readable"`
	Env                                    []string
	PIDsVisible                            []int  `json:"pids_visible"`
	ProcSysWrite                           string `json:"proc_sys_write"`
	DevMem                                 string `json:"dev_mem"`
	Hostname, Cwd                          string
	StdinTTY                               bool `json:"stdin_tty"`
}

// Expect says what a backend legitimately differs in.
type Expect struct {
	// ImageRoot: the root is an image with its own (empty) /home and /root.
	ImageRoot bool
	// NoLoopback: the sandbox may lack even lo (gVisor's netstack under
	// podman has no interface; under docker it has lo alone).
	NoLoopback bool
	// PtraceAllowed: ptrace is contained by another layer (gVisor's sentry).
	PtraceAllowed bool
	// PodNetwork: the sandbox has a network interface besides lo (a
	// Kubernetes Pod's), whose traffic a NetworkPolicy drops; the TCP
	// checks still apply, but a UDP send succeeds before the drop.
	PodNetwork bool
	// ExecScratch: /tmp and /workspace are writable but not noexec
	// (Kubernetes mounts emptyDirs without noexec and has no option for it).
	ExecScratch bool
}

// Finding is one check.
type Finding struct {
	Check string
	OK    bool
	Got   string
}

// Run runs the probe in a new sandbox made from template (its ID, Limits
// and Env are used) and evaluates it. A listener on the host's loopback and
// a file in the host's home directory must both stay out of reach.
func Run(ctx context.Context, b sandbox.Backend, template sandbox.Spec, exp Expect) (Report, []Finding, error) {
	var r Report
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, nil, err
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	spec := template
	spec.Command = []string{"python3", "-I", "-c", Script}
	spec.Env = append(append([]string{}, template.Env...), fmt.Sprintf("PROBE_HOST_PORT=%d", ln.Addr().(*net.TCPAddr).Port))
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		marker := filepath.Join(home, fmt.Sprintf(".codemode-posture-%d-%d", os.Getpid(), time.Now().UnixNano()))
		if os.WriteFile(marker, []byte("secret"), 0o600) == nil {
			defer os.Remove(marker)
			spec.Env = append(spec.Env, "PROBE_HOME_MARKER="+marker)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := b.Start(ctx, spec)
	if err != nil {
		return r, nil, err
	}
	defer s.Kill(context.Background())
	s.Stdin().Close()
	var out, errOut bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&errOut, s.Stderr()); close(done) }()
	io.Copy(&out, s.Stdout())
	<-done
	if _, err := s.Wait(ctx); err != nil {
		return r, nil, err
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return r, nil, fmt.Errorf("posture probe output %q (stderr %q): %w", out.String(), errOut.String(), err)
	}
	return r, Evaluate(r, exp, accepted.Load()), nil
}

// Evaluate compares a report with codemode's promises.
func Evaluate(p Report, exp Expect, hostConnections int32) []Finding {
	zero := "0000000000000000"
	var out []Finding
	check := func(name string, ok bool, got any) {
		out = append(out, Finding{Check: name, OK: ok, Got: fmt.Sprint(got)})
	}
	check("uid 65534", equalInts(p.UID, 65534, 65534), p.UID)
	check("gid 65534", equalInts(p.GID, 65534, 65534), p.GID)
	check("no supplementary groups", len(p.Groups) == 0, p.Groups)
	check("CapEff 0", p.CapEff == zero, p.CapEff)
	check("CapPrm 0", p.CapPrm == zero, p.CapPrm)
	check("CapInh 0", p.CapInh == zero, p.CapInh)
	check("CapAmb 0", p.CapAmb == zero, p.CapAmb)
	check("NoNewPrivs 1", p.NoNewPrivs == "1", p.NoNewPrivs)
	check("root not writable", p.WriteRoot != "ok", p.WriteRoot)
	check("/usr not writable", p.WriteUsr != "ok", p.WriteUsr)
	check("/etc not writable", p.WriteEtc != "ok", p.WriteEtc)
	if exp.ExecScratch {
		check("/tmp writable", strings.HasPrefix(p.Tmp, "ok/"), p.Tmp)
		check("/workspace writable", strings.HasPrefix(p.Workspace, "ok/"), p.Workspace)
	} else {
		check("/tmp writable, noexec", p.Tmp == "ok/EACCES", p.Tmp)
		check("/workspace writable, noexec", p.Workspace == "ok/EACCES", p.Workspace)
	}
	check("no connection to a host listener", p.ConnectHostLoopback != "ok" && hostConnections == 0, p.ConnectHostLoopback)
	check("no internet (TCP)", p.ConnectInternet != "ok", p.ConnectInternet)
	if !exp.PodNetwork { // a Pod's sendto succeeds; the NetworkPolicy drops the datagram after it
		check("no internet (UDP)", p.UDPInternet != "ok", p.UDPInternet)
	}
	if exp.PodNetwork {
		check("lo and the Pod's interface only", slices.Contains(p.Interfaces, "lo") && len(p.Interfaces) <= 2, p.Interfaces)
	} else if exp.NoLoopback {
		check("no network interface but lo", len(p.Interfaces) == 0 || len(p.Interfaces) == 1 && p.Interfaces[0] == "lo", p.Interfaces)
	} else {
		check("only lo", len(p.Interfaces) == 1 && p.Interfaces[0] == "lo", p.Interfaces)
	}
	if !exp.PtraceAllowed {
		check("unshare(CLONE_NEWUSER) refused", p.UnshareUser != "ok", p.UnshareUser)
		check("unshare(CLONE_NEWNS) refused", p.UnshareMount != "ok", p.UnshareMount)
		check("ptrace(PTRACE_TRACEME) refused", p.PtraceTraceme != "ok", p.PtraceTraceme)
		check("bpf refused", p.BPF != "ok", p.BPF)
		check("keyctl refused", p.Keyctl != "ok", p.Keyctl)
	}
	check("mount refused", p.Mount != "ok", p.Mount)
	check("host home directory invisible", !p.HostHomeVisible, p.HostHomeVisible)
	check("/home invisible or the image's own", !p.HomeVisible || exp.ImageRoot, p.HomeVisible)
	check("/root invisible or the image's own", !p.RootVisible || exp.ImageRoot, p.RootVisible)
	check("/etc/shadow unreadable", p.ShadowReadable != "ok", p.ShadowReadable)
	check("/proc/sys read-only", p.ProcSysWrite != "ok", p.ProcSysWrite)
	check("/dev/mem unavailable", p.DevMem != "ok", p.DevMem)
	check("own pid namespace", len(p.PIDsVisible) > 0 && len(p.PIDsVisible) < 10 && p.PIDsVisible[0] == 1, p.PIDsVisible)
	check("stdin is not a terminal", !p.StdinTTY, p.StdinTTY)
	return out
}

// Failed returns the findings that are not OK.
func Failed(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if !f.OK {
			out = append(out, f)
		}
	}
	return out
}

func equalInts(got []int, want ...int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
