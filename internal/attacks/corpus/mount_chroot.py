# attack: mount-chroot
# category: mount
# expect: blocked: chroot is refused by seccomp (EPERM), which also rules out the classic chroot-then-cd-.. breakout
# gvisor: contained: chroot needs CAP_SYS_CHROOT, which the sandbox user does not have in the sentry either
# parallel: yes


def breakout():
    os.makedirs("/tmp/jail/inner", exist_ok=True)
    if libc.chroot(b"/tmp/jail") != 0:
        err = ctypes.get_errno()
        # Where unshare works (gVisor), a new user namespace grants CAP_SYS_CHROOT.
        if libc.unshare(0x10000000) != 0 or libc.chroot(b"/tmp/jail") != 0:
            return "err %d" % err
    for _ in range(64):
        os.chdir("..")
    libc.chroot(b".")
    return "ok " + ",".join(sorted(os.listdir("/"))[:8])


res = in_child(breakout)
if res.startswith("err "):
    blocked(why("chroot", int(res[4:])))
else:
    escaped("chroot succeeded" + (": / now lists " + res[3:] if res.startswith("ok ") else " (" + res + ")"))
done()
