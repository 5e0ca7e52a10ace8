# attack: res-cpu-quota
# category: resources
# expect: blocked: with a CPU limit of N, several busy processes together get about N CPUs (cgroup CPU quota); without a configured limit this is not claimed
# timeout: 20
import multiprocessing
cpus = HOST["limits"]["cpus"]
n = max(2, (os.cpu_count() or 2))
if not cpus:
    blocked("no CPU limit configured: not claimed (the timeout bounds CPU time)")
    done()
else:
    wall = 3.0
    start = time.time()
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            end = time.time() + wall
            while time.time() < end:
                pass
            os._exit(0)
        kids.append(pid)
    cpu = 0.0
    for pid in kids:
        _, _, ru = os.wait4(pid, 0)
        cpu += ru.ru_utime + ru.ru_stime
    elapsed = time.time() - start
    used = cpu / elapsed
    print("%d busy processes used %.2f CPUs over %.1fs (limit %s, host has %s)" % (n, used, elapsed, cpus, os.cpu_count()))
    if used > cpus * 1.3 + 0.1:
        escaped("used %.2f CPUs with a limit of %s" % (used, cpus))
    else:
        blocked("CPU quota: %.2f CPUs used with a limit of %s" % (used, cpus))
    done()
