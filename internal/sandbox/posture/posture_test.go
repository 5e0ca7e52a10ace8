package posture

import (
	"strings"
	"testing"
)

func goodReport() Report {
	zero := "0000000000000000"
	return Report{UID: []int{65534, 65534}, GID: []int{65534, 65534}, CapInh: zero, CapPrm: zero, CapEff: zero, CapBnd: zero, CapAmb: zero,
		NoNewPrivs: "1", Seccomp: "2", WriteRoot: "EROFS", WriteUsr: "EROFS", WriteEtc: "EROFS", Tmp: "ok/EACCES", Workspace: "ok/EACCES",
		Interfaces: []string{"lo"}, ConnectHostLoopback: "ECONNREFUSED", ConnectInternet: "ENETUNREACH", UDPInternet: "ENETUNREACH",
		UnshareUser: "EPERM", UnshareMount: "EPERM", Mount: "EPERM", Chroot: "EPERM", PtraceTraceme: "denied", BPF: "EPERM", Keyctl: "EPERM",
		ShadowReadable: "ENOENT", PIDsVisible: []int{1, 7}, ProcSysWrite: "EROFS", DevMem: "ENOENT"}
}

func TestEvaluate(t *testing.T) {
	if failed := Failed(Evaluate(goodReport(), Expect{}, 0)); len(failed) != 0 {
		t.Fatalf("a good report fails: %+v", failed)
	}
	tests := []struct {
		name  string
		mut   func(*Report)
		exp   Expect
		conns int32
		want  string
	}{
		{"root uid", func(r *Report) { r.UID = []int{0, 0} }, Expect{}, 0, "uid 65534"},
		{"capabilities", func(r *Report) { r.CapEff = "0000000000000400" }, Expect{}, 0, "CapEff 0"},
		{"exec in /tmp", func(r *Report) { r.Tmp = "ok/exec-ok" }, Expect{}, 0, "/tmp writable, noexec"},
		{"host listener reached", func(r *Report) {}, Expect{}, 1, "no connection to a host listener"},
		{"network interface", func(r *Report) { r.Interfaces = []string{"eth0", "lo"} }, Expect{}, 0, "only lo"},
		{"unshare", func(r *Report) { r.UnshareUser = "ok" }, Expect{}, 0, "unshare(CLONE_NEWUSER) refused"},
		{"host home", func(r *Report) { r.HostHomeVisible = true }, Expect{ImageRoot: true}, 0, "host home directory invisible"},
		{"an interface under gVisor", func(r *Report) { r.Interfaces = []string{"lo", "eth0"} }, Expect{NoLoopback: true}, 0, "no network interface but lo"},
	}
	for _, tc := range tests {
		r := goodReport()
		tc.mut(&r)
		failed := Failed(Evaluate(r, tc.exp, tc.conns))
		if len(failed) != 1 || !strings.HasPrefix(failed[0].Check, tc.want) {
			t.Errorf("%s: failed = %+v, want only %q", tc.name, failed, tc.want)
		}
	}
	r := goodReport()
	r.HomeVisible, r.RootVisible, r.UnshareUser, r.PtraceTraceme = true, true, "ok", "ok"
	if failed := Failed(Evaluate(r, Expect{ImageRoot: true, PtraceAllowed: true}, 0)); len(failed) != 0 {
		t.Errorf("image /home and gVisor-contained ptrace flagged: %+v", failed)
	}
}
