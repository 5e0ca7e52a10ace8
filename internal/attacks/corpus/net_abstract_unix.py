# attack: net-abstract-unix
# category: network
# expect: blocked: abstract unix sockets belong to a network namespace; the host's (codemode's test listener, container shims, X11) are not reachable (ECONNREFUSED), and Landlock scoping (ABI 6) forbids connecting outside the sandbox anyway
# check: listener
# parallel: yes
names = [HOST["abstract"], "/tmp/.X11-unix/X0", "/containerd-shim/moby.sock"]
for name in names:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect("\0" + name)
        escaped("connected to abstract socket @%s" % name)
    except OSError as e:
        blocked(ename(e.errno) + (" (not in this network namespace)" if e.errno == errno.ECONNREFUSED else ""))
    finally:
        s.close()
try:
    with open("/proc/net/unix") as f:
        seen = [l.split()[-1] for l in f.read().splitlines()[1:] if l.split()[-1].startswith("@")]
    if any(HOST["abstract"] in n for n in seen):
        escaped("the host's abstract socket is listed in /proc/net/unix")
except OSError:
    pass
done()
