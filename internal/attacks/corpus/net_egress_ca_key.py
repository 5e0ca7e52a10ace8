# attack: net-egress-ca-key
# category: network
# expect: blocked: the egress directory mounted into the sandbox holds only the proxy's socket and a CA bundle of certificates, read-only; codemode's CA key is in no file, variable or process the sandbox can read
# check: secrets
# parallel: yes
E = HOST["egress"]
if not E:
    blocked("no egress: codemode refuses to run the egress proxy on this backend")
else:
    d = "/run/codemode/egress"
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        names = []
        escaped("the egress directory is not there: %s" % ename(e.errno))
    for name in names:
        text, err = read_text(os.path.join(d, name), limit=1 << 22)
        if text and "PRIVATE KEY" in text:
            escaped("%s holds a private key" % name)
    for k, v in os.environ.items():
        if "PRIVATE KEY" in v:
            escaped("the variable %s holds a private key" % k)
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        text, _ = read_text("/proc/%s/environ" % pid)
        if text and "PRIVATE KEY" in text:
            escaped("/proc/%s/environ holds a private key" % pid)
    for name in ["ca-bundle.pem", "proxy.sock", "ca-key.pem"]:
        try:
            with open(os.path.join(d, name), "w") as f:
                f.write("x")
            escaped("wrote %s in the egress directory" % name)
        except OSError as e:
            blocked("write %s: %s" % (name, ename(e.errno)))
    if not _escaped:
        blocked("holds %s" % ", ".join(names))
done()
