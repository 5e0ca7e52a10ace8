# attack: mount-umount
# category: mount
# expect: blocked: umount2 of /proc, /dev, /tmp and / (to uncover what lies beneath) is refused by seccomp (EPERM)
# gvisor: contained: unmounting inside the sentry changes only gVisor's VFS
# parallel: yes
MNT_DETACH = 2
for target in (b"/proc", b"/dev", b"/tmp", b"/workspace", b"/"):
    child_syscall("umount2", 166, target, MNT_DETACH)
done()
