# attack: ptrace-traceme-fork
# category: ptrace
# expect: blocked: PTRACE_TRACEME is refused by seccomp (EPERM); where it is allowed (gVisor), the interpreter stopping itself must still end in a timeout or a dead sandbox the host cleans up, never a hang
# gvisor: contained: ptrace is implemented by the sentry; a stopped tracee is a gVisor task, and the host kills the container at the timeout
# check: bounded
# timeout: 3
PTRACE_TRACEME = 0
# First in a child, as a probe.
res = in_child(lambda: "ok" if libc.ptrace(PTRACE_TRACEME, 0, None, None) == 0 else "err %d" % ctypes.get_errno())
if res.startswith("err "):
    blocked(why("ptrace", int(res[4:])))
    done()
else:
    # Allowed: now the form that hangs some engines forever. The interpreter
    # itself asks to be traced by its parent and forks; whatever the parent
    # (an init, tini, a shim) does with the stop, the host must stay in charge.
    print("PTRACE_TRACEME allowed in a child; trying it in the interpreter", flush=True)
    os.write(1, b"VERDICT escaped PTRACE_TRACEME allowed\n")
    if libc.ptrace(PTRACE_TRACEME, 0, None, None) == 0:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(30)
