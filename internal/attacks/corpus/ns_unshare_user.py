# attack: ns-unshare-user
# category: namespaces
# expect: blocked: unshare(CLONE_NEWUSER) is refused by the seccomp filter (EPERM), so the code can never become root of a new user namespace
# gvisor: contained: the sentry implements user namespaces itself; becoming "root" there gives nothing on the host kernel
# parallel: yes
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000


def attempt():
    if libc.unshare(CLONE_NEWUSER) != 0:
        return "err %d" % ctypes.get_errno()
    steps = ["unshare(CLONE_NEWUSER) succeeded"]
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("0 %d 1" % os.geteuid())
        steps.append("mapped uid 0")
    except OSError as e:
        steps.append("uid_map %s" % ename(e.errno))
    if libc.unshare(CLONE_NEWNS) == 0 and libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
        steps.append("mounted a tmpfs")
    return "ok " + ", ".join(steps)


res = in_child(attempt)
if res.startswith("err "):
    blocked(why("unshare", int(res[4:])))
else:
    escaped(res[3:] if res.startswith("ok ") else "child " + res)
done()
