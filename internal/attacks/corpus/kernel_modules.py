# attack: kernel-modules
# category: kernel
# expect: blocked: init_module, finit_module and delete_module are refused by seccomp (EPERM); no capability could load a module anyway
# gvisor: contained: there is no module loading in gVisor
# parallel: yes
SYS_init_module, SYS_delete_module, SYS_finit_module = 175, 176, 313
image = ctypes.create_string_buffer(b"\x7fELF" + b"\0" * 60, 64)
try_syscall("init_module", SYS_init_module, image, 64, b"", ok="init_module accepted an image")
fd = os.open("/dev/null", os.O_RDONLY)
try_syscall("finit_module", SYS_finit_module, fd, b"", 0, ok="finit_module accepted a file")
os.close(fd)
for mod in (b"loop", b"overlay", b"nf_tables"):
    rc, err = sys_call(SYS_delete_module, mod, os.O_NONBLOCK)
    if rc == -1:
        blocked(why("delete_module", err) if err != errno.ENOENT else "ENOENT")
    else:
        escaped("delete_module(%s) unloaded a host module" % mod.decode())
try_open("/proc/sys/kernel/modprobe", os.O_WRONLY, "/proc/sys/kernel/modprobe is writable")
done()
