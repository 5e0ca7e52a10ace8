# attack: kernel-io-uring
# category: kernel
# expect: blocked: io_uring_setup is refused by seccomp (EPERM), removing io_uring's large kernel attack surface
# gvisor: contained: io_uring, if offered at all, is the sentry's own implementation
# parallel: yes
SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register = 425, 426, 427
params = ctypes.create_string_buffer(120)
rc, err = sys_call(SYS_io_uring_setup, 8, params)
if rc == -1:
    blocked(why("io_uring_setup", err))
else:
    os.close(rc)
    escaped("io_uring_setup returned a ring")
try_syscall("io_uring_enter", SYS_io_uring_enter, 0, 1, 0, 0, None, 0)
try_syscall("io_uring_register", SYS_io_uring_register, 0, 0, None, 0)
done()
