# attack: kernel-kexec-reboot
# category: kernel
# expect: blocked: kexec_load, kexec_file_load, reboot and syslog are refused by seccomp (EPERM)
# gvisor: contained: reboot inside the sentry would at most end this sandbox; kexec and the kernel log are not the host's
# parallel: yes
SYS_kexec_load, SYS_kexec_file_load, SYS_reboot, SYS_syslog = 246, 320, 169, 103
try_syscall("kexec_load", SYS_kexec_load, 0, 0, None, 0, ok="kexec_load accepted a call")
try_syscall("kexec_file_load", SYS_kexec_file_load, -1, -1, 0, b"", 0x4, ok="kexec_file_load accepted a call")
# LINUX_REBOOT_CMD_CAD_OFF: the harmless reboot command (disables Ctrl-Alt-Del).
rc, err = sys_call(SYS_reboot, 0xfee1dead, 672274793, 0, None)
if rc == -1:
    blocked(why("reboot", err))
elif GVISOR:
    escaped("reboot(CAD_OFF) accepted by the sentry")
else:
    escaped("reboot(CAD_OFF) accepted")
buf = ctypes.create_string_buffer(4096)
rc, err = sys_call(SYS_syslog, 3, buf, 4096)  # SYSLOG_ACTION_READ_ALL
if rc == -1:
    blocked(why("syslog", err))
elif rc > 0:
    escaped("syslog read %d bytes of the kernel log: %r" % (rc, buf.raw[:60]))
done()
