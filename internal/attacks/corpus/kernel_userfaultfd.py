# attack: kernel-userfaultfd
# category: kernel
# expect: blocked: userfaultfd (a favourite primitive for winning kernel races) is refused by seccomp (EPERM), and /dev/userfaultfd is absent
# gvisor: contained: gVisor has no host userfaultfd for applications
# parallel: yes
SYS_userfaultfd = 323
for flags in (os.O_CLOEXEC, os.O_CLOEXEC | 1):  # 1 = UFFD_USER_MODE_ONLY
    rc, err = sys_call(SYS_userfaultfd, flags)
    if rc == -1:
        blocked(why("userfaultfd", err))
    else:
        os.close(rc)
        escaped("userfaultfd returned an fd")
try_open("/dev/userfaultfd", os.O_RDWR, "opened /dev/userfaultfd")
done()
