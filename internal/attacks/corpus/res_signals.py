# attack: res-signals
# category: resources
# expect: blocked: signals cannot reach anything outside the sandbox: pid 1 is the sandbox's own init (which ignores them, or, like docker's init, passes them on to the sandbox's own processes, ending only this sandbox), codemode's host pid does not exist in the pid namespace (ESRCH), and Landlock scoping covers the rest
# check: died-ok
# parallel: yes
host_pid = HOST["host_pid"]
try:
    os.kill(host_pid, 0)
    cmd, _ = read_text("/proc/%d/cmdline" % host_pid)
    blocked("pid %d is a sandbox process (%s)" % (host_pid, (cmd or "?").split("\0")[0]))
except OSError as e:
    blocked("codemode's pid: " + ename(e.errno))
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGSTOP, signal.SIGKILL):
    for target in (1, os.getppid()):
        if target in (0, os.getpid()):
            continue
        try:
            os.kill(target, sig)
        except OSError as e:
            blocked(ename(e.errno))
time.sleep(0.5)
if os.path.exists("/proc/1"):
    st, _ = read_text("/proc/1/status")
    state = [l for l in (st or "").splitlines() if l.startswith("State:")]
    if state and "T (stopped)" in state[0]:
        os.kill(1, signal.SIGCONT)
        escaped("stopped pid 1")
    else:
        blocked("pid 1 unaffected")
signalable = []
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        os.kill(pid, 0)
        signalable.append(pid)
    except OSError:
        pass
blocked("%d signalable processes, all in the sandbox" % len(signalable))
done()
