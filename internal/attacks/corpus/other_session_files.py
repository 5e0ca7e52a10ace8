# attack: other-session-files
# category: host-data
# expect: blocked: another session's /workspace, /tmp, /dev/shm and processes are invisible: every session has its own mount and pid namespace (or container); the victim's secret never shows up
# check: secrets
# needs: victim
# timeout: 20
# parallel: yes
for p in HOST["victim_files"]:
    text, err = read_text(p)
    if text is None:
        blocked(err)
    elif text.strip():
        escaped("read %s of another session" % p)
    else:
        blocked("%s is this session's own" % p)
for d in ("/dev/shm", "/tmp", "/workspace", "/run"):
    try:
        for f in os.listdir(d):
            if "victim" in f:
                escaped("another session's file %s/%s is visible" % (d, f))
    except OSError:
        pass
mine = os.getpid()
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    cmd, _ = read_text("/proc/%d/cmdline" % pid)
    for p in HOST["victim_files"]:
        text, _ = read_text("/proc/%d/root%s" % (pid, p))
        if text and text.strip():
            escaped("read another session's %s through /proc/%d/root" % (p, pid))
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if "victim" in target:
            escaped("process %d holds another session's file %s" % (pid, target))
blocked("only this session's processes and files are visible")
done()
