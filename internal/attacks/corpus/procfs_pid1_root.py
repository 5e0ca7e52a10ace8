# attack: procfs-pid1-root
# category: procfs
# expect: blocked: /proc/<pid>/root and /cwd of every visible process (pid 1 included) lead only into the sandbox's own root; no host file (home markers, /etc/shadow) is reachable through them
# parallel: yes
markers = list(HOST["markers"].values())
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
reached = 0
for pid in pids:
    for link in ("root", "cwd"):
        base = "/proc/%d/%s" % (pid, link)
        try:
            os.listdir(base)
        except OSError as e:
            blocked("%s %s" % (link, ename(e.errno)))
            continue
        reached += 1
        for m in markers + ["/etc/shadow"]:
            text, err = read_text(base + m)
            if text and (m != "/etc/shadow" or "$" in text):
                escaped("read %s through %s" % (m, base))
    text, err = read_text("/proc/%d/environ" % pid)
    if text and HOST["env_secret_name"] in text:
        escaped("codemode's secret variable in /proc/%d/environ" % pid)
if reached:
    blocked("only the sandbox's own root behind /proc/*/root (%d processes visible)" % len(pids))
done()
