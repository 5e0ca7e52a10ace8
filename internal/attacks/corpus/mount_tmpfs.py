# attack: mount-tmpfs
# category: mount
# expect: blocked: mount(2), a read-write remount of /, a bind of / and the new mount API (fsopen, open_tree) are refused by seccomp (EPERM)
# gvisor: contained: mounts made inside the sentry exist only in gVisor's own VFS
# parallel: yes
MS_BIND, MS_REMOUNT, MS_REC = 0x1000, 0x20, 0x4000
SYS_fsopen, SYS_open_tree = 430, 428
child_syscall("mount", 165, b"none", b"/tmp", b"tmpfs", 0, None)
child_syscall("mount", 165, b"/", b"/tmp", None, MS_BIND | MS_REC, None)
child_syscall("mount", 165, None, b"/", None, MS_REMOUNT | MS_BIND, None)
child_syscall("fsopen", SYS_fsopen, b"tmpfs", 0)
child_syscall("open_tree", SYS_open_tree, -100, b"/", 1)  # OPEN_TREE_CLONE
try:
    with open("/codemode-attack-probe", "w") as f:
        f.write("x")
    escaped("the root filesystem is writable")
except OSError as e:
    blocked("root stays read-only (%s)" % ename(e.errno))
done()
