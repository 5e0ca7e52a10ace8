# attack: ptrace-attach
# category: ptrace
# expect: blocked: ptrace attach/seize of pid 1 and of a sibling, and process_vm_readv, are refused by seccomp (EPERM)
# gvisor: contained: the sentry's ptrace only reaches tasks of the same gVisor sandbox
# parallel: yes
SYS_ptrace, SYS_process_vm_readv = 101, 310
PTRACE_ATTACH, PTRACE_SEIZE, PTRACE_DETACH = 16, 0x4206, 17
r, w = os.pipe()
sib = os.fork()
if sib == 0:
    os.close(w)
    os.read(r, 1)
    os._exit(0)
os.close(r)
for target, label in ((1, "pid 1"), (os.getppid(), "parent"), (sib, "sibling")):
    if target <= 0:
        continue
    for req, rname in ((PTRACE_ATTACH, "attach"), (PTRACE_SEIZE, "seize")):
        res = in_child(lambda: "ok" if sys_call(SYS_ptrace, req, target, 0, 0)[0] == 0 else "err %d" % ctypes.get_errno())
        if res.startswith("err "):
            err = int(res[4:])
            blocked(why("ptrace", err) if err != errno.ESRCH else "ESRCH")
        elif res == "ok":
            if label == "sibling" and GVISOR:
                escaped("ptrace %s of a sibling succeeded" % rname)
            else:
                escaped("ptrace %s of %s succeeded" % (rname, label))
        else:
            escaped("ptrace %s of %s: %s" % (rname, label, res))
buf = ctypes.create_string_buffer(64)
local = struct.pack("<QQ", ctypes.addressof(buf), 64)
remote = struct.pack("<QQ", 0x400000, 64)
lb, rb = ctypes.create_string_buffer(local, 16), ctypes.create_string_buffer(remote, 16)
rc, err = sys_call(SYS_process_vm_readv, 1, lb, 1, rb, 1, 0)
if rc == -1:
    blocked(why("process_vm_readv", err) if err != errno.EFAULT else "EFAULT")
else:
    escaped("process_vm_readv of pid 1 read %d bytes" % rc)
os.close(w)
os.waitpid(sib, 0)
done()
