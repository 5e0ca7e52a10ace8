# attack: sysfs-write
# category: procfs
# expect: blocked: no writable file anywhere under /sys (absent in the native sandbox, read-only in containers): uevent_helper, power state, device and module parameters stay out of reach
# gvisor: contained: gVisor's /sys is synthetic
# check: sentinels
# timeout: 20
# parallel: yes
if not os.path.isdir("/sys") or not os.listdir("/sys"):
    blocked("/sys not mounted")
    done()
else:
    found, tried, deadline = [], 0, time.time() + 6
    for top in ("/sys/kernel", "/sys/power", "/sys/fs", "/sys/class/net", "/sys/module", "/sys/devices/system/cpu",
                "/sys/devices/virtual/net", "/sys/firmware"):
        for root, dirs, files in os.walk(top, followlinks=False):
            if time.time() > deadline:
                break
            if root.count("/") > 6:
                dirs[:] = []
            for fn in files:
                p = os.path.join(root, fn)
                try:
                    if not os.stat(p).st_mode & 0o222:
                        continue
                except OSError:
                    continue
                tried += 1
                try:
                    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                except OSError as e:
                    blocked(ename(e.errno))
                    continue
                os.close(fd)
                found.append(p)
    if found:
        escaped("%d sysfs files open for writing, e.g. %s" % (len(found), ", ".join(found[:3])))
    elif tried == 0:
        blocked("no writable-looking file under /sys")
    done()
