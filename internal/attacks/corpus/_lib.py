# Helpers shared by every attack program. The runner sends, as one cell:
# `HOST = {...}` (the fixtures this attack may aim at), this file, then the
# attack. An attack records what it observed with blocked(how) and
# escaped(what), and ends with done(), which prints the one verdict line the
# runner reads:
#
#   VERDICT blocked <how it was stopped>
#   VERDICT escaped <what got out>
#
# Everything here runs inside the sandbox only.
import ctypes
import errno
import os
import select
import signal
import socket
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

_escaped, _blocked = [], []


def escaped(what):
    """Record something the sandbox should have stopped and did not."""
    _escaped.append(str(what))


def blocked(how):
    """Record how one attempt was stopped (short: 'seccomp EPERM')."""
    _blocked.append(str(how))


def _uniq(items):
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def done():
    if _escaped:
        line = "VERDICT escaped " + "; ".join(_uniq(_escaped))
    elif _blocked:
        line = "VERDICT blocked " + ", ".join(_uniq(_blocked))
    else:
        line = "VERDICT error the attack recorded no observation"
    sys.stdout.flush()
    os.write(1, ("\n" + line[:600] + "\n").encode())


def ename(err):
    return errno.errorcode.get(err, str(err))


def _status(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


SECCOMP = _status("Seccomp") == "2"
GVISOR = HOST["backend"] == "gvisor"
DENIED = set(HOST["seccomp_denied"])


def why(name, err):
    """How a refused syscall was stopped, as precisely as can be told from inside."""
    n = ename(err)
    if SECCOMP and err == errno.EPERM and (name in DENIED or name == "clone"):
        return "seccomp EPERM"
    if SECCOMP and err == errno.ENOSYS and name == "clone3":
        return "seccomp ENOSYS"
    if GVISOR:
        return "gVisor sentry: " + n
    return n


def _arg(a):
    if a is None:
        return ctypes.c_void_p(None)
    if isinstance(a, int):
        return ctypes.c_long(a)
    if isinstance(a, bytes):
        return ctypes.c_char_p(a)
    return a  # ctypes objects, byref() results


def sys_call(nr, *args):
    """Raw syscall; returns (result, errno)."""
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[_arg(a) for a in args])
    return rc, (ctypes.get_errno() if rc == -1 else 0)


def try_syscall(name, nr, *args, ok=None):
    """Attempt a syscall that must be refused: record blocked(why) or escaped."""
    rc, err = sys_call(nr, *args)
    if rc == -1:
        blocked(why(name, err))
        return False
    escaped("%s succeeded (returned %d)" % (name, rc) if ok is None else ok)
    return True


def in_child(fn, timeout=10):
    """Run fn() in a forked child and return the string it returns, so that a
    call that succeeds (as some do inside gVisor's own kernel) cannot change
    this interpreter. A child that hangs is killed: 'hung'."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                res = str(fn())
            except BaseException as e:  # noqa: BLE001
                res = "exception %s: %s" % (type(e).__name__, e)
            os.write(w, res.encode()[:4000])
        finally:
            os._exit(0)
    os.close(w)
    out = b""
    deadline = time.time() + timeout
    while True:
        left = deadline - time.time()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return "hung"
        rl, _, _ = select.select([r], [], [], left)
        if not rl:
            continue
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode(errors="replace") or "child died"


def child_syscall(name, nr, *args):
    """try_syscall in a child; the child reports 'ok <rc>' or the errno name."""
    def attempt():
        rc, err = sys_call(nr, *args)
        return "ok %d" % rc if rc != -1 else "err %d" % err
    res = in_child(attempt)
    if res.startswith("err "):
        blocked(why(name, int(res[4:])))
        return False
    if res.startswith("ok "):
        escaped("%s succeeded (returned %s)" % (name, res[3:]))
        return True
    escaped("%s: child %s" % (name, res))
    return True


def try_open(path, flags, what=None):
    """Open that must fail; records blocked(errno) or escaped."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError as e:
        blocked(ename(e.errno))
        return False
    os.close(fd)
    escaped(what or ("opened %s" % path))
    return True


def heartbeat():
    """A beat() for the busy loops of an attack with the host's "stopped"
    check: it appends "pid time" to HEARTBEAT (a file in the host's data
    directory) at most every 0.1 s, and the host checks that the file stops
    growing once the call has returned. Forked children share the file."""
    fd = os.open(HEARTBEAT, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    due = [0.0]

    def beat():
        now = time.time()
        if now >= due[0]:
            due[0] = now + 0.1
            os.write(fd, b"%d %.3f\n" % (os.getpid(), now))
    return beat


def tcp_connect(addr, timeout=2):
    """Try a TCP connection to (host, port): "connected", "timeout", or the
    errno of the failure."""
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(addr)
        return "connected"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return e.errno
    finally:
        s.close()


def read_text(path, limit=1 << 16):
    """Content of path, or None with the errno name."""
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace"), None
    except OSError as e:
        return None, ename(e.errno)


def find_channel():
    """The runtime's Session object (holds the private channel): sandboxed
    code runs in the same process as the runtime, so it can always find it."""
    import gc
    for o in gc.get_objects():
        if type(o).__name__ == "Session" and hasattr(o, "channel") and hasattr(o, "rpc"):
            return o
    raise RuntimeError("runtime session not found")


def frame(kind, payload):
    return struct.pack(">BI", ord(kind), len(payload)) + payload


def proxy_exchange(raw, tls_host=None, timeout=10):
    """Send raw bytes to the egress relay (127.0.0.1:3128 in this sandbox)
    and return (status, body) of the answer; status is 0 when the proxy
    closed without one. With tls_host, raw is sent after a CONNECT to it and
    a TLS handshake trusting the sandbox's CA bundle."""
    s = socket.create_connection(("127.0.0.1", 3128), timeout=timeout)
    try:
        if tls_host:
            import ssl
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (tls_host, tls_host)).encode())
            head = _read_head(s)
            if not head.startswith(b"HTTP/1.1 200"):
                return _status_of(head), head
            ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
            s = ctx.wrap_socket(s, server_hostname=tls_host.rsplit(":", 1)[0])
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                n = _content_length(head)
                if (n is not None and len(body) >= n) or body.endswith(b"0\r\n\r\n") or len(data) > 1 << 20:
                    break
        head, _, body = data.partition(b"\r\n\r\n")
        return _status_of(head), body
    finally:
        s.close()


def _read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def _status_of(head):
    try:
        return int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def _content_length(head):
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return None
