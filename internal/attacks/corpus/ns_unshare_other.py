# attack: ns-unshare-other
# category: namespaces
# expect: blocked: unshare of every other namespace type (mount, net, pid, ipc, uts, cgroup, time) is refused by seccomp (EPERM)
# gvisor: contained: namespaces created by the sentry exist only inside the gVisor kernel
# parallel: yes
FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWNET": 0x40000000, "CLONE_NEWPID": 0x20000000,
         "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUTS": 0x04000000, "CLONE_NEWCGROUP": 0x02000000,
         "CLONE_NEWTIME": 0x00000080}
for name, flag in FLAGS.items():
    res = in_child(lambda: "ok" if libc.unshare(flag) == 0 else "err %d" % ctypes.get_errno())
    if res.startswith("err "):
        err = int(res[4:])
        if err == errno.EINVAL and name == "CLONE_NEWTIME":
            blocked("EINVAL (time namespaces unsupported)")
        else:
            blocked(why("unshare", err))
    else:
        escaped("unshare(%s) %s" % (name, "succeeded" if res == "ok" else res))
done()
