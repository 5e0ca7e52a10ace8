# attack: devices-kmsg
# category: devices
# expect: blocked: the host kernel log cannot be read or written: /dev/kmsg and /proc/kmsg are absent or refused, syslog(2) is refused by seccomp
# gvisor: contained: gVisor's kernel log is its own
# parallel: yes
for path, flags in (("/dev/kmsg", os.O_RDONLY), ("/dev/kmsg", os.O_WRONLY), ("/proc/kmsg", os.O_RDONLY)):
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError as e:
        blocked(ename(e.errno))
        continue
    try:
        data = os.read(fd, 256) if flags == os.O_RDONLY else b""
    except OSError as e:
        data = b""
        blocked("opened %s but %s" % (path, ename(e.errno)))
        os.close(fd)
        continue
    os.close(fd)
    if flags == os.O_RDONLY and data:
        if GVISOR:
            escaped("read gVisor's kernel log through %s" % path)
        else:
            escaped("read the kernel log through %s: %r" % (path, data[:60]))
    elif flags == os.O_WRONLY:
        escaped("%s open for writing (kernel log injection)" % path)
rc, err = sys_call(103, 10, None, 0)  # SYSLOG_ACTION_SIZE_BUFFER
if rc == -1:
    blocked(why("syslog", err))
else:
    escaped("syslog(SIZE_BUFFER) answered %d" % rc)
done()
