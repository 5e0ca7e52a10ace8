# attack: mount-pivot-root
# category: mount
# expect: blocked: pivot_root is refused by seccomp (EPERM)
# gvisor: contained: pivot_root needs CAP_SYS_ADMIN, absent inside the sentry too
# parallel: yes
os.makedirs("/tmp/newroot/old", exist_ok=True)


def attempt():
    os.chdir("/tmp/newroot")
    rc, err = sys_call(155, b".", b"old")
    return "ok" if rc == 0 else "err %d" % err


res = in_child(attempt)
if res.startswith("err "):
    blocked(why("pivot_root", int(res[4:])))
else:
    escaped("pivot_root " + res)
child_syscall("pivot_root", 155, b"/", b"/")
done()
