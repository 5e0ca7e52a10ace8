"""Report the sandbox's security posture as one JSON object on stdout.

Run inside a sandbox by sandboxtest; every probe is a real attempt, not a
configuration read-back where an attempt is possible.
"""
import ctypes
import errno
import json
import os
import socket
import subprocess
import sys

report = {}
libc = ctypes.CDLL(None, use_errno=True)


def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def syscall_result(rc):
    if rc == 0 or rc > 0:
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


status = {}
with open("/proc/self/status") as f:
    for line in f:
        k, _, v = line.partition(":")
        status[k] = v.strip()
report["uid"] = [os.getuid(), os.geteuid()]
report["gid"] = [os.getgid(), os.getegid()]
report["groups"] = sorted(set(os.getgroups()) - {os.getgid()})
for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    report[k] = status.get(k)

report["write_root"] = attempt(lambda: open("/codemode-probe", "w"))
report["write_usr"] = attempt(lambda: open("/usr/codemode-probe", "w"))
report["write_etc"] = attempt(lambda: open("/etc/codemode-probe", "w"))


def write_and_exec(dirname):
    path = os.path.join(dirname, "probe.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(path, 0o755)
    try:
        subprocess.run([path], capture_output=True, check=True)
        return "exec-ok"
    except PermissionError:
        return "EACCES"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        os.unlink(path)


report["tmp"] = attempt(lambda: open("/tmp/probe", "w").write("x")) + "/" + write_and_exec("/tmp")
report["workspace"] = attempt(lambda: open("/workspace/probe", "w").write("x")) + "/" + write_and_exec("/workspace")
report["interfaces"] = sorted(name for _, name in socket.if_nameindex())

host_port = int(os.environ.get("PROBE_HOST_PORT", "0"))


def tcp_connect(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr)
    finally:
        s.close()


report["connect_host_loopback"] = attempt(lambda: tcp_connect(("127.0.0.1", host_port))) if host_port else "skipped"
report["connect_internet"] = attempt(lambda: tcp_connect(("1.1.1.1", 53)))
report["udp_internet"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))

def in_child(call):
    """Run a probe in a forked child, so that a probe that succeeds (as some
    do inside gVisor's own kernel) cannot change this process's view."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            result = call()
        except BaseException as e:  # noqa: BLE001
            result = type(e).__name__
        os.write(w, result.encode())
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 100)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode() or "child died"


CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
report["unshare_user"] = in_child(lambda: syscall_result(libc.unshare(CLONE_NEWUSER)))
report["unshare_mount"] = in_child(lambda: syscall_result(libc.unshare(CLONE_NEWNS)))
report["mount"] = in_child(lambda: syscall_result(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
report["chroot"] = in_child(lambda: syscall_result(libc.chroot(b"/tmp")))
PTRACE_TRACEME = 0
pid = os.fork()
if pid == 0:
    # In a child: PTRACE_TRACEME followed by a fork hangs some engines forever.
    rc = libc.ptrace(PTRACE_TRACEME, 0, None, None)
    os._exit(0 if rc == 0 else 1)
_, st = os.waitpid(pid, 0)
report["ptrace_traceme"] = "ok" if os.waitstatus_to_exitcode(st) == 0 else "denied"
SYS_bpf = 321
report["bpf"] = in_child(lambda: syscall_result(libc.syscall(SYS_bpf, 0, None, 0)))
SYS_keyctl = 250
report["keyctl"] = in_child(lambda: syscall_result(libc.syscall(SYS_keyctl, 0, 0, 0, 0, 0)))

marker = os.environ.get("PROBE_HOME_MARKER", "")
report["host_home_visible"] = bool(marker) and os.path.exists(marker)
report["home_visible"] = os.path.exists("/home")
report["root_visible"] = os.path.exists("/root")
report["shadow_readable"] = attempt(lambda: open("/etc/shadow").read())
report["env"] = sorted(os.environ)
report["pids_visible"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
report["proc_sys_write"] = attempt(lambda: open("/proc/sys/kernel/hostname", "w").write("x"))
report["dev_mem"] = attempt(lambda: open("/dev/mem", "rb"))
report["hostname"] = socket.gethostname()
report["cwd"] = os.getcwd()
report["stdin_tty"] = os.isatty(0)
print(json.dumps(report))
