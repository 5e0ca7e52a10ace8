# attack: ns-clone3
# category: namespaces
# expect: blocked: clone3 is answered ENOSYS by seccomp (its flags live in memory a BPF filter cannot read), so namespace flags cannot be smuggled past the clone rule
# gvisor: contained: clone3 is the sentry's business; namespaces it makes stay inside gVisor
# parallel: yes
SYS_clone3 = 435
SIGCHLD = 17


def clone3(flags):
    def attempt():
        args = struct.pack("<11Q", flags, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
        buf = ctypes.create_string_buffer(args, len(args))
        rc, err = sys_call(SYS_clone3, buf, len(args))
        if rc == 0:
            os._exit(0)
        if rc < 0:
            return "err %d" % err
        os.waitpid(rc, 0)
        return "ok"
    return in_child(attempt)


for name, flag in {"CLONE_NEWUSER": 0x10000000, "CLONE_NEWNS|CLONE_NEWNET": 0x40020000, "none": 0}.items():
    res = clone3(flag)
    if res.startswith("err "):
        blocked(why("clone3", int(res[4:])))
    elif flag == 0:
        pass  # plain clone3 is not an attack
    else:
        escaped("clone3(%s) %s" % (name, "created a process" if res == "ok" else res))
done()
