# attack: res-fork-bomb
# category: resources
# expect: blocked: fork fails with EAGAIN at the pids limit (cgroup pids.max, or RLIMIT_NPROC where no cgroup is writable or under gVisor); under gVisor the forked interpreters may reach the memory limit first, which ends the sandbox; either way the host's process count stays bounded and the next call works
# check: procs, died-ok
# timeout: 30
limit = HOST["limits"]["pids"]
r, w = os.pipe()
kids, err = [], None
while len(kids) < limit * 8:
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # wait for the parent to let go
        os._exit(0)
    kids.append(pid)
os.close(w)
os.close(r)
for pid in kids:
    os.waitpid(pid, 0)
print("forked", len(kids), "children; then", ename(err.errno) if err else "no error")
if len(kids) >= limit * 8:
    escaped("forked %d processes with a pids limit of %d" % (len(kids), limit))
elif err is not None:
    blocked("%s after %d forks (limit %d)" % (ename(err.errno), len(kids), limit))
done()
