# attack: cgroup-escape
# category: procfs
# expect: blocked: the cgroup filesystem cannot be mounted (CVE-2022-0492 needs mount), release_agent/notify_on_release cannot be written, and the sandbox cannot raise its own memory or pids limit
# gvisor: contained: the sentry's cgroupfs is its own
# check: sentinels
# parallel: yes
targets = []
try:
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] in ("cgroup", "cgroup2"):
                targets.append(fields[4])
except OSError:
    pass
own = []
try:
    with open("/proc/self/cgroup") as f:
        for line in f:
            own.append(line.strip().split(":", 2)[2])
except OSError:
    pass
files = []
for mp in targets:
    for sub in set(["/"] + own):
        d = os.path.normpath(mp + "/" + sub)
        for name in ("release_agent", "notify_on_release", "cgroup.procs", "memory.limit_in_bytes",
                     "memory.max", "memory.memsw.limit_in_bytes", "pids.max", "cpu.cfs_quota_us", "cpu.max"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                files.append(p)
for p in files:
    try_open(p, os.O_WRONLY, "opened %s for writing" % p)
if not files:
    blocked("no cgroup filesystem visible")
os.makedirs("/tmp/cg", exist_ok=True)
child_syscall("mount", 165, b"cgroup", b"/tmp/cg", b"cgroup", 0, b"memory")
child_syscall("mount", 165, b"cgroup2", b"/tmp/cg", b"cgroup2", 0, None)
done()
