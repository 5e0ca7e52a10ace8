# attack: ns-clone-flags
# category: namespaces
# expect: blocked: raw clone(2) with any namespace flag is refused by seccomp (EPERM) while plain fork keeps working
# gvisor: contained: clone with namespace flags creates namespaces inside the sentry only
# parallel: yes
SYS_clone = 56
SIGCHLD = 17
FLAGS = {"CLONE_NEWUSER": 0x10000000, "CLONE_NEWNS": 0x00020000, "CLONE_NEWNET": 0x40000000,
         "CLONE_NEWPID": 0x20000000, "CLONE_NEWUSER|CLONE_NEWNS": 0x10020000}


def clone(flags):
    def attempt():
        rc, err = sys_call(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0)
        if rc == 0:
            os._exit(0)  # in the clone: leave at once
        if rc < 0:
            return "err %d" % err
        os.waitpid(rc, 0)
        return "ok"
    return in_child(attempt)


for name, flag in FLAGS.items():
    res = clone(flag)
    if res.startswith("err "):
        blocked(why("clone", int(res[4:])))
    else:
        escaped("clone(%s) %s" % (name, "created a process" if res == "ok" else res))
if clone(0) != "ok":
    escaped("sanity: plain clone failed, the test is broken")
done()
