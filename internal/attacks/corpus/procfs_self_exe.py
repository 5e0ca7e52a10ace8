# attack: procfs-self-exe
# category: procfs
# expect: blocked: /proc/self/exe and /proc/1/exe cannot be opened for writing (CVE-2019-5736 overwrote runc this way): read-only mounts, ETXTBSY or EACCES
# check: sentinels
# parallel: yes
for path in ("/proc/self/exe", "/proc/1/exe", "/proc/%d/exe" % os.getppid()):
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC):
        try:
            fd = os.open(path, flags)
        except OSError as e:
            blocked(ename(e.errno))
            continue
        os.close(fd)
        escaped("opened %s for writing" % path)
# Reopen through an O_PATH descriptor, the runc trick.
try:
    fd = os.open("/proc/self/exe", os.O_PATH)
    try:
        fd2 = os.open("/proc/self/fd/%d" % fd, os.O_WRONLY)
        os.close(fd2)
        escaped("reopened the interpreter binary for writing through O_PATH")
    except OSError as e:
        blocked(ename(e.errno))
    os.close(fd)
except OSError as e:
    blocked(ename(e.errno))
done()
