# attack: kernel-keyctl
# category: kernel
# expect: blocked: keyctl, add_key and request_key are refused by seccomp (EPERM): no access to kernel keyrings, the host's or the sandbox's
# gvisor: contained: gVisor has its own minimal keyring emulation
# parallel: yes
SYS_add_key, SYS_request_key, SYS_keyctl = 248, 249, 250
KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = 0, -3, -4
KEYCTL_READ = 11
for ring in (KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING):
    rc, err = sys_call(SYS_keyctl, KEYCTL_GET_KEYRING_ID, ring, 0)
    if rc == -1:
        blocked(why("keyctl", err))
    else:
        buf = ctypes.create_string_buffer(4096)
        n, _ = sys_call(SYS_keyctl, KEYCTL_READ, rc, buf, 4096)
        escaped("keyctl reached keyring %d%s" % (rc, " (%d bytes of key ids)" % n if n > 0 else ""))
try_syscall("add_key", SYS_add_key, b"user", b"codemode-attack", b"x", 1, -2, ok="add_key stored a key")
try_syscall("request_key", SYS_request_key, b"user", b"codemode-attack", None, 0, ok="request_key found a key")
text, err = read_text("/proc/keys")
if text:
    escaped("/proc/keys lists keys: " + text.splitlines()[0][:80])
else:
    blocked("/proc/keys empty or masked" if text is not None else "/proc/keys " + err)
done()
