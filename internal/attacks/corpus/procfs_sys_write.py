# attack: procfs-sys-write
# category: procfs
# expect: blocked: /proc/sys, /proc/sysrq-trigger and binfmt_misc cannot be opened for writing (read-only bind, no capabilities): core_pattern, modprobe and friends are the classic container breakouts
# gvisor: contained: the sentry's /proc/sys is its own
# check: sentinels
# parallel: yes
# Only open for writing, never write: an open that succeeds is already the escape.
paths = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname",
         "/proc/sys/vm/drop_caches", "/proc/sys/kernel/panic", "/proc/sys/fs/binfmt_misc/register",
         "/proc/sysrq-trigger", "/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/yama/ptrace_scope",
         "/proc/sys/user/max_user_namespaces"]
for p in paths:
    try_open(p, os.O_WRONLY, "opened %s for writing" % p)
done()
