# attack: res-orphan-daemon
# category: resources
# expect: blocked: double-forked daemons in their own session that ignore SIGHUP and SIGTERM die with the sandbox: when the session ends, the host has no process left (pid namespace or container kill)
# check: procs-after
# The host finds what is left of the sandbox by its pid namespace.
print("PIDNS", os.readlink("/proc/self/ns/pid"))
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.closerange(0, 1024)
        time.sleep(3600)
        os._exit(0)
    os.waitpid(pid, 0)
blocked("daemons started (the host checks they die with the session)")
done()
