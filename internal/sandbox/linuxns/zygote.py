# codemode zygote: the template interpreter of the native sandbox, run as
# `python <flags> -c <this file> <module>...`. It imports the named modules,
# then forks one child per request from the host. No request carries code the
# template runs: the child enters a sandbox of its own (see _enter) and only
# then runs the request's code, so the template never runs user code and
# every session is isolated like a booted one.
#
# The template is uid 0 of a user namespace of its own whose other uids map
# to the host uids codemode hands to sessions; it keeps its capabilities in
# that namespace so that children can build their sandboxes.
import builtins, ctypes, fcntl, json, os, resource, select, signal, socket, struct, sys, traceback, types

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x2000000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, SECCOMP_FILTER_FLAG_SPEC_ALLOW = 1, 1, 4
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = -100, 4


def _check(ret, what):
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))
    return ret


def _mount(src, dst, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None
    _check(_libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)), "mount " + dst)


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


# Landlock access rights (include/uapi/linux/landlock.h) and the sets the
# booted sandbox grants through go-landlock: RODirs, RWDirs, RWFiles.
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_LL_TRUNCATE = 1 << 14
_LL_READ = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
_LL_WRITE = _LL_WRITE_FILE | _LL_TRUNCATE | sum(1 << b for b in range(4, 13))  # remove_*, make_*
_LL_FILE = _LL_EXECUTE | _LL_WRITE_FILE | _LL_TRUNCATE | _LL_READ_FILE


def _landlock(nr, rw_dirs, rw_files):
    """Applies the booted sandbox's Landlock rules and returns its description."""
    abi = _libc.syscall(nr["landlock_create_ruleset"], None, 0, 1)
    if abi < 1:
        return "not available: kernel has no Landlock"
    handled = (1 << 13) - 1  # ABI 1
    for version, bit in ((2, 13), (3, 14), (5, 15)):  # refer, truncate, ioctl_dev
        if abi >= version:
            handled |= 1 << bit
    attr = ctypes.create_string_buffer(struct.pack("QQQ", handled, 0, 0), 24)
    fd = _check(_libc.syscall(nr["landlock_create_ruleset"], attr, 8, 0), "landlock_create_ruleset")
    try:
        rules = [("/", _LL_READ, False)] + [(d, _LL_READ | _LL_WRITE, False) for d in rw_dirs]
        rules += [(f, (_LL_READ | _LL_WRITE) & _LL_FILE, True) for f in rw_files]
        for path, access, optional in rules:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                if optional:
                    continue
                raise
            try:
                if not os.path.isdir(path):
                    access &= _LL_FILE
                beneath = ctypes.create_string_buffer(struct.pack("=Qi", access & handled, pfd), 12)
                _check(_libc.syscall(nr["landlock_add_rule"], fd, 1, beneath, 0), "landlock_add_rule " + path)
            finally:
                os.close(pfd)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(_libc.syscall(nr["landlock_restrict_self"], fd, 0), "landlock_restrict_self")
    finally:
        os.close(fd)
    desc = "filesystem (ABI %d)" % abi
    if abi >= 6:
        scoped = ctypes.create_string_buffer(struct.pack("QQQ", 0, 0, 3), 24)  # abstract sockets, signals
        sfd = _libc.syscall(nr["landlock_create_ruleset"], scoped, 24, 0)
        if sfd >= 0:
            if _libc.syscall(nr["landlock_restrict_self"], sfd, 0) == 0:
                desc += ", signal and abstract-socket scoping"
            os.close(sfd)
    return desc


def _locked_flags(path):
    f = os.statvfs(path).f_flag
    m = 0
    for st, ms in ((os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME),
                   (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME)):
        if f & st:
            m |= ms
    return m


def _mount_point(path, is_dir, uid):
    """Creates a mount point, with the directories above it owned by the
    session's user as the booted init (already that user) makes them."""
    parent = os.path.dirname(path)
    if not os.path.exists(parent):
        _mount_point(parent, True, uid)
    if os.path.lexists(path):
        return
    if is_dir:
        os.mkdir(path, 0o755)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    os.chown(path, uid, uid)


def _enter(req, mount_fds):
    """Builds the session's sandbox around this freshly forked process, in the
    order the booted init uses, and returns what Landlock enforced."""
    # The host has moved us into the session's cgroups (that is what the
    # go-ahead meant), so the new cgroup namespace is rooted there.
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # We are pid 1 of a new pid namespace: a fresh procfs shows only us.
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for p in req["procMasked"]:
        if os.path.exists("/proc/" + p):
            _mount("/dev/null", "/proc/" + p, None, MS_BIND)
    for p in req["procReadOnly"]:
        d = "/proc/" + p
        if os.path.isdir(d):
            _mount(d, d, None, MS_BIND)
            _mount(None, d, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | _locked_flags(d))
    noexec = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _mount("tmpfs", "/tmp", "tmpfs", noexec, "size=%d,mode=1777" % req["tmpBytes"])
    # Owned by the session's user, as the booted init (already that user) makes it.
    _mount("tmpfs", "/workspace", "tmpfs", noexec, "size=%d,mode=0755,uid=%d,gid=%d" % (req["workspaceBytes"], req["uid"], req["uid"]))
    _mount("tmpfs", "/dev/shm", "tmpfs", noexec, "size=64m,mode=1777")
    # The session's mounts, detached copies the host made of their sources
    # (read-only ones already read-only), go where the booted init binds
    # them: the zygote's root has their mount points, the fresh tmpfs not.
    for m, fd in zip(req["mounts"], mount_fds):
        _mount_point(m["target"], m["dir"], req["uid"])
        _check(_libc.syscall(req["nr"]["move_mount"], fd, b"", AT_FDCWD, m["target"].encode(), MOVE_MOUNT_F_EMPTY_PATH),
               "move_mount " + m["target"])
        os.close(fd)
    host = req["hostname"].encode()
    _check(_libc.sethostname(host, len(host)), "sethostname")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        import fcntl
        ifr = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack("16sH14x", ifr)[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    for r in req["rlimits"]:
        resource.setrlimit(r["resource"], (r["value"], r["value"]))
    # The session's own uid in the template's namespace (its own host uid),
    # then a user namespace of its own in which that uid is 65534, as in a
    # booted sandbox. Changing uid cleared the dumpable flag, which the
    # kernel needs set to let us write our own id maps.
    uid = req["uid"]
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(SET_DUMPABLE)")
    _check(_libc.unshare(CLONE_NEWUSER), "unshare(user)")
    _write("/proc/self/uid_map", "65534 %d 1" % uid)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/gid_map", "65534 %d 1" % uid)
    landlock = "disabled by configuration"
    if req["landlock"]:
        landlock = _landlock(req["nr"], req["writableDirs"], ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"])
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for c in range(last + 1):
        if _libc.prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 and ctypes.get_errno() != 22:
            _check(-1, "dropping capability %d" % c)
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient capabilities")
    header = ctypes.create_string_buffer(struct.pack("Ii", 0x20080522, 0))  # _LINUX_CAPABILITY_VERSION_3
    _check(_libc.syscall(req["nr"]["capset"], header, ctypes.create_string_buffer(24)), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    bpf = bytes.fromhex(req["seccomp"])
    prog = _Fprog(len(bpf) // 8, bpf)
    _check(_libc.syscall(req["nr"]["seccomp"], SECCOMP_SET_MODE_FILTER,
                         SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_SPEC_ALLOW, ctypes.byref(prog)), "seccomp")
    os.chdir(req["dir"])
    # State the template drew at random must not be shared between sessions.
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    return landlock


def _run(code, argv):
    """Runs code as `python -c` would, then exits the process."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    sys.argv = ["-c"] + argv
    status = 0
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code
        else:
            print(e.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(status & 0xFF)


def _child(req, fds, keep):
    stdin, stdout, stderr, status, go, reply, request = fds[:_FDS]
    try:
        for fd in keep:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # The go-ahead, then the command: "g" and its JSON, to EOF.
        chunks = []
        while True:
            chunk = os.read(go, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(go)
        payload = b"".join(chunks)
        if payload[:1] != b"g":
            os._exit(125)  # the host gave up on this session
        command = json.loads(payload[1:])
        landlock = _enter(req, fds[_FDS:])
        # Out of the way of 0-4 first, so no dup2 below overwrites another.
        stdin, stdout, stderr, reply, request, status = (fcntl.fcntl(fd, fcntl.F_DUPFD, 5) if fd < 5 else fd
                                                         for fd in (stdin, stdout, stderr, reply, request, status))
        # 3 and 4: the host's sandbox.DirectReplyFD and DirectRequestFD.
        for i, fd in enumerate((stdin, stdout, stderr, reply, request)):
            os.dup2(fd, i)
        os.closerange(5, status)
        os.closerange(status + 1, 1 << 16)
    except BaseException as e:
        os.write(status, (json.dumps({"error": "%s: %s" % (type(e).__name__, e)}) + "\n").encode())
        os._exit(125)
    os.write(status, (json.dumps({"ok": True, "landlock": landlock}) + "\n").encode())
    os.close(status)
    _run(command["code"], command["argv"])


_MAX_MOUNTS = 64
# A fork request's descriptors before its mounts: stdin, stdout, stderr,
# status, go-ahead and the direct reply and request pipes.
_FDS = 7


# Where the imports' caches go (matplotlib's font list, fontconfig's), as a
# booted runtime's preload does (_codemode.main._PRELOAD_ENV): /tmp, never
# the sessions' /workspace. matplotlib remembers the directory it chose, so
# the children inherit the choice.
_PRELOAD_ENV = {"MPLCONFIGDIR": "/tmp/matplotlib", "XDG_CACHE_HOME": "/tmp/cache"}


def _template(preload):
    saved = {k: os.environ.get(k) for k in _PRELOAD_ENV}
    os.environ.update(_PRELOAD_ENV)
    for name in preload:
        try:
            __import__(name)
        except Exception as e:
            print("zygote: preloading %s failed: %s" % (name, e), file=sys.stderr)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    sys.stdout.flush()
    sys.stderr.flush()
    ctl = socket.socket(fileno=0)
    own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> the template's copy of the child's status pipe
    while True:
        ready, _, _ = select.select([ctl, wake_r], [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            while children:
                try:
                    pid, ws = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                fd = children.pop(pid, None)
                if fd is not None:
                    os.write(fd, (json.dumps({"exit": ws}) + "\n").encode())
                    os.close(fd)
        if ctl not in ready:
            continue
        msg, fds, _, _ = socket.recv_fds(ctl, 1 << 20, _FDS + _MAX_MOUNTS)
        if not msg:
            return  # the host is gone
        req = json.loads(msg)
        if "warm" in req:
            # codemode's own warm-up code (its runtime), never a session's.
            try:
                exec(compile(req["warm"], "<zygote warm-up>", "exec"), {"__name__": "__zygote_warm__"})
            except Exception:
                traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
            continue
        try:
            if len(fds) != _FDS + len(req["mounts"]):
                raise ValueError("want %d descriptors, got %d" % (_FDS + len(req["mounts"]), len(fds)))
            # Our next child is pid 1 of a new pid namespace; then we go
            # back to ours for the next request.
            _check(_libc.unshare(CLONE_NEWPID), "unshare(pid)")
            try:
                pid = os.fork()
                if pid == 0:
                    ctl.detach()
                    _child(req, fds, [own_pidns, wake_r, wake_w] + list(children.values()))
            finally:
                _check(_libc.setns(own_pidns, CLONE_NEWPID), "setns(pid)")
            pidfd = os.pidfd_open(pid)
        except Exception as e:
            for fd in fds:
                os.close(fd)
            ctl.send(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}).encode())
            continue
        for fd in fds[:3] + fds[4:]:
            os.close(fd)
        children[pid] = fds[3]
        socket.send_fds(ctl, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


_template(sys.argv[1:])
