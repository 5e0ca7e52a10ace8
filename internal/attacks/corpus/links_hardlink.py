# attack: links-hardlink
# category: links
# expect: blocked: hardlinks from the scratch tmpfs to system files fail (EXDEV: different mounts), including through /proc/self/fd and linkat(AT_EMPTY_PATH); no writable name for a read-only file can be made
# parallel: yes
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000


def made(src, path, how):
    try:
        fd = os.open(path, os.O_WRONLY)
        os.close(fd)
        escaped("%s: a writable hard link to %s" % (how, src))
    except OSError as e:
        blocked("link made but %s" % ename(e.errno))
    os.unlink(path)


for src in ("/etc/passwd", "/usr/bin/python3", "/proc/self/exe", "/proc/1/exe"):
    try:
        os.link(src, "/tmp/hl")
        made(src, "/tmp/hl", "link")
    except OSError as e:
        blocked(ename(e.errno))
    try:
        fd = os.open(src, os.O_PATH)
    except OSError as e:
        blocked(ename(e.errno))
        continue
    if libc.linkat(fd, b"", AT_FDCWD, b"/tmp/hl2", AT_EMPTY_PATH) == 0:
        made(src, "/tmp/hl2", "linkat(AT_EMPTY_PATH)")
    else:
        blocked(ename(ctypes.get_errno()))
    if libc.linkat(AT_FDCWD, ("/proc/self/fd/%d" % fd).encode(), AT_FDCWD, b"/tmp/hl3", AT_SYMLINK_FOLLOW) == 0:
        made(src, "/tmp/hl3", "linkat(/proc/self/fd)")
    else:
        blocked(ename(ctypes.get_errno()))
    os.close(fd)
done()
