# attack: links-data-dir
# category: links
# expect: blocked: in a writable data directory shared with the host, symlinks the sandbox plants point into the sandbox's namespace only, hardlinks to files it does not own are refused (protected_hardlinks: EPERM), the sticky bit protects the host's files, and no device node can be made (the host inspects the directory afterwards)
# check: datadir
# needs: data-dir
d = HOST["data_dir"]
host_file = os.path.join(d, HOST["data_root_file"])
for name, target in (("link-home", HOST["markers"]["home"]), ("link-root", "/"), ("link-etc", "/etc/shadow"),
                     ("link-parent", "../../..")):
    try:
        os.symlink(target, os.path.join(d, name))
        blocked("symlink planted (resolved only in the sandbox)")
    except OSError as e:
        blocked("symlink " + ename(e.errno))
    text, err = read_text(os.path.join(d, name))
    if text and name == "link-home":
        escaped("followed a symlink to codemode's home")
for src, label in ((host_file, "a root-owned host file"), ("/etc/passwd", "/etc/passwd"), ("/usr/bin/python3", "the interpreter")):
    try:
        os.link(src, os.path.join(d, "hl-" + os.path.basename(src)))
        escaped("hard-linked %s into the data directory" % label)
    except OSError as e:
        blocked("link " + ename(e.errno))
for op, fn in (("unlink", lambda: os.unlink(host_file)), ("rename", lambda: os.rename(host_file, os.path.join(d, "moved"))),
               ("write", lambda: open(host_file, "a").write("pwned")), ("chmod", lambda: os.chmod(host_file, 0o777))):
    try:
        fn()
        escaped("could %s a root-owned host file in the data directory" % op)
    except OSError as e:
        blocked("%s %s" % (op, ename(e.errno)))
try:
    os.mknod(os.path.join(d, "mem"), 0o20666, os.makedev(1, 1))
    escaped("created a device node in a host directory")
except OSError as e:
    blocked("mknod " + ename(e.errno))
p = os.path.join(d, "suid")
with open(p, "w") as f:
    f.write("#!/bin/sh\nid\n")
try:
    os.chmod(p, 0o6755)
except OSError as e:
    blocked("chmod setuid " + ename(e.errno))
done()
