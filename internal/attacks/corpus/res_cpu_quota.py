# attack: res-cpu-quota
# category: resources
# expect: blocked: with a CPU limit of N, several busy processes together get about N CPUs (cgroup CPU quota); without a configured limit this is not claimed
# timeout: 20
# Two figures must both exceed the limit for an escape: the CPU time the
# kernel accounts to the busy processes (rusage), and the work they got
# done, in CPUs' worth of one process's speed measured first in this same
# sandbox. Either alone is noisy: under gVisor the sentry's own threads run
# under the same quota and its accounting of a task's time swells on a
# loaded host, and a loaded host slows the work. Under gVisor only a clear
# excess (more than 1.8 times the limit) counts.
cpus = HOST["limits"]["cpus"]
n = max(2, (os.cpu_count() or 2))


def spin(count, wall):
    """Runs count busy processes for wall seconds each; returns the loop
    iterations they made, the CPU seconds they were accounted and the
    elapsed time."""
    start = time.time()
    kids = []
    for _ in range(count):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            end, i = time.time() + wall, 0
            while time.time() < end:
                i += 1
            os.write(w, b"%d" % i)
            os._exit(0)
        os.close(w)
        kids.append((pid, r))
    iters, cpu = 0, 0.0
    for pid, r in kids:
        out = b""
        while True:
            chunk = os.read(r, 64)
            if not chunk:
                break
            out += chunk
        os.close(r)
        _, _, ru = os.wait4(pid, 0)
        iters += int(out or b"0")
        cpu += ru.ru_utime + ru.ru_stime
    return iters, cpu, time.time() - start


if not cpus:
    blocked("no CPU limit configured: not claimed (the timeout bounds CPU time)")
    done()
else:
    def speed():
        """One process's speed while it is on a CPU: iterations per CPU
        second (per wall second if that is more), so that neither a quota
        below one CPU nor a busy host slows the yardstick."""
        one, one_cpu, one_wall = spin(1, 1.0)
        return one / max(min(one_cpu, one_wall), 0.01)

    # The fastest of three runs, before and after the busy processes: the
    # first process forked in a fresh gVisor sandbox runs several times
    # slower, and a faster yardstick only makes the work figure smaller.
    speeds = [speed(), speed()]
    iters, cpu, elapsed = spin(n, 3.0)
    speeds.append(speed())
    used = cpu / elapsed
    work = iters / max(speeds) / elapsed
    bound = cpus * 1.8 if GVISOR else cpus * 1.3 + 0.1
    print("%d busy processes over %.1fs: %.2f CPUs accounted, %.2f CPUs of work (limit %s, host has %s, counted above %.2f)"
          % (n, elapsed, used, work, cpus, os.cpu_count(), bound))
    if used > bound and work > bound:
        escaped("used %.2f CPUs (%.2f CPUs of work) with a limit of %s" % (used, work, cpus))
    else:
        blocked("CPU quota: %.2f CPUs used (%.2f CPUs of work) with a limit of %s" % (used, work, cpus))
    done()
