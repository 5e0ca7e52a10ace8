# attack: ns-setns
# category: namespaces
# expect: blocked: setns() into any namespace (through /proc/<pid>/ns or a pidfd) is refused by seccomp (EPERM); the only namespaces visible are the sandbox's own
# gvisor: contained: setns is served by the sentry, and the only namespaces it can name are the sandbox's own
# parallel: yes
SYS_setns, SYS_pidfd_open = 308, 434
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
tried = 0
for pid in pids[:4]:
    for ns in ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup"):
        path = "/proc/%d/ns/%s" % (pid, ns)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            blocked("open %s: %s" % (path.rsplit("/", 1)[-1], ename(e.errno)) if e.errno != errno.ENOENT else "ENOENT")
            continue
        tried += 1
        child_syscall("setns", SYS_setns, fd, 0)
        os.close(fd)
rc, err = sys_call(SYS_pidfd_open, 1, 0)
if rc >= 0:
    child_syscall("setns", SYS_setns, rc, 0x00020000 | 0x40000000)
    os.close(rc)
else:
    blocked("pidfd_open " + ename(err))
if tried == 0:
    blocked("no namespace file could be opened")
done()
