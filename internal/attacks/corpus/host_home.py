# attack: host-home
# category: host-data
# expect: blocked: no home directory of the host is visible: /root and /home are absent (native) or the image's empty ones (containers); the marker planted in codemode's $HOME cannot be found by path or by searching the whole filesystem
# check: secrets
# timeout: 20
# parallel: yes
for d in ("/root", "/home", os.path.dirname(HOST["markers"]["home"]), HOST["home"]):
    try:
        entries = os.listdir(d)
        blocked("%s lists %d entries of the image" % (d, len(entries)) if d in ("/root", "/home") else "%s exists in the sandbox" % d)
        if d == HOST["home"]:
            escaped("codemode's home directory %s is visible" % d)
    except OSError as e:
        blocked(ename(e.errno))
for m in HOST["markers"].values():
    text, err = read_text(m)
    if text is not None:
        escaped("read host marker %s" % m)
    else:
        blocked(err)
# Search every visible file system for the marker names.
names = set(os.path.basename(m) for m in HOST["markers"].values())
deadline, hits = time.time() + 8, []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    if time.time() > deadline:
        break
    hits += [os.path.join(root, f) for f in files if f in names]
if hits:
    escaped("found host markers at %s" % ", ".join(hits[:3]))
else:
    blocked("no marker anywhere in the sandbox's filesystem")
done()
