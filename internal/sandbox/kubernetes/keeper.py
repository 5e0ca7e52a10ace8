# The keeper is PID 1 of a sandbox Pod. It runs the session's command as its
# child and lets one connection at a time (an exec'd connector, see
# connector.py) talk to it through a Unix socket, so that the session
# outlives the codemode replica that started it.
#
# Between a connection and the keeper, each direction is a stream of frames:
# one kind byte, a big-endian uint32 length, the payload.
#   to the keeper:   'd' bytes for the child's stdin, 'c' close the child's stdin
#   from the keeper: 'A' attached (first on every connection), 'a' so many
#                    bytes (uint32) of this connection's 'd' frames have
#                    reached the child's stdin (the host keeps a bounded
#                    window in flight, so a child that stops reading stalls
#                    the host's writes as a pipe would),
#                    'o' bytes of the child's stdout, 'T' taken over by a
#                    newer connection, 'X' the child exited (status, uint32)
# Only complete 'd' frames reach the child, so a connection that dies
# mid-frame leaves nothing half-written. When the child's stdout is the wire
# protocol (frames of kind M, O or E), 'o' frames carry whole wire frames
# only, and the first 'M' frame (the runtime's ready message) is sent again
# first to every later connection; any other output is relayed as it comes.
#
# User code runs as the keeper's uid and may connect to the socket, signal
# or trace the keeper: it can then only disturb its own session, whose host
# trusts nothing that arrives from the Pod.
#
# argv[1] is JSON: argv, env, dir, socket, nofile, nproc, buffer (bytes), and
# filter: codemode's seccomp policy (base64 of a struct sock_filter array),
# installed on the command before it starts, so that it and everything it
# runs are held to the same syscall policy as on the other backends,
# whatever profile the cluster's runtime applies.
import base64
import ctypes
import fcntl
import json
import os
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time

WIRE_KINDS = b"MOE"
WIRE_MAX = 64 << 20
IN_MAX = WIRE_MAX + (64 << 10)
READ = 64 << 10


def frame(kind, payload=b""):
    return kind + struct.pack(">I", len(payload)) + payload


def log(msg):
    os.write(2, ("codemode keeper: %s\n" % msg).encode())


def seccomp_installer(encoded):
    """Returns a function that loads the filter on the calling process; all
    the allocation happens here, before the fork."""
    if not encoded:
        return lambda: None
    prog = base64.b64decode(encoded)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    ref = ctypes.byref(fprog)

    def install():
        # PR_SET_NO_NEW_PRIVS (the Pod's allowPrivilegeEscalation: false
        # has set it already), then PR_SET_SECCOMP, SECCOMP_MODE_FILTER.
        if prctl(38, 1, 0, 0, 0) != 0 or prctl(22, 2, ref, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, "installing the seccomp filter: " + os.strerror(err))
        install.keep = (buf, fprog)

    return install


class Output:
    """Splits the child's stdout into units that are never cut in two."""

    def __init__(self):
        self.buf = bytearray()
        self.mode = None  # "wire" or "raw", decided by the first bytes
        self.first = None  # the first whole 'M' frame, in wire mode

    def feed(self, data):
        self.buf += data
        if self.mode is None:
            if not self.buf:
                return []
            if self.buf[:1] not in (b"M", b"O", b"E"):
                self.mode = "raw"
            elif len(self.buf) < 5:
                return []
            else:
                self.mode = "wire" if struct.unpack(">I", self.buf[1:5])[0] <= WIRE_MAX else "raw"
        if self.mode == "raw":
            out = [bytes(self.buf)] if self.buf else []
            self.buf = bytearray()
            return out
        units = []
        while len(self.buf) >= 5:
            kind = self.buf[:1]
            n = struct.unpack(">I", self.buf[1:5])[0]
            if kind not in (b"M", b"O", b"E") or n > WIRE_MAX:
                # Not the protocol after all: the host will say so.
                self.mode = "raw"
                units.append(bytes(self.buf))
                self.buf = bytearray()
                return units
            if len(self.buf) < 5 + n:
                break
            unit = bytes(self.buf[: 5 + n])
            del self.buf[: 5 + n]
            if kind == b"M" and self.first is None:
                self.first = unit
            units.append(unit)
        return units

    def rest(self):
        out = bytes(self.buf)
        self.buf = bytearray()
        return out


class Keeper:
    def __init__(self, cfg):
        self.cfg = cfg
        self.sel = selectors.DefaultSelector()
        self.limit = int(cfg.get("buffer") or (WIRE_MAX + (1 << 20)))
        self.out = Output()
        self.queue = []  # whole 'o' frames for the connection, oldest first
        self.queued = 0
        self.sent = 0  # bytes of queue[0] already sent
        self.conn = None
        self.inbuf = bytearray()
        self.first_frame = None  # the queued frame that carries out.first
        self.first_sent = False
        self.stdin_pending = bytearray()
        self.stdin_closing = False
        self.unacked = 0  # bytes written to the child's stdin, not yet acknowledged
        self.status = None
        self.child = None
        self.stdin = self.stdout = -1
        self.stdout_open = True

    def start(self):
        path = self.cfg["socket"]
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(path), 0o700)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        os.chmod(path, 0o600)
        self.listener.listen(4)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")

        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self.terminate)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "signal")

    def spawn(self):
        """Starts the command, at the first connection: nothing it writes
        can be lost before anyone listens, however soon it exits."""
        nofile = int(self.cfg.get("nofile") or 0)
        nproc = int(self.cfg.get("nproc") or 0)
        install = seccomp_installer(self.cfg.get("filter"))

        def limits():
            if nofile > 0:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if nproc > 0:
                # Counted per uid on the node, not per Pod (see probe.go).
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            install()

        self.child = subprocess.Popen(
            self.cfg["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
            env=dict(e.split("=", 1) for e in self.cfg.get("env") or [] if "=" in e),
            cwd=self.cfg.get("dir") or "/", preexec_fn=limits, bufsize=0)
        self.stdin = self.child.stdin.fileno()
        self.stdout = self.child.stdout.fileno()
        for fd in (self.stdin, self.stdout):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self.sel.register(self.stdout, selectors.EVENT_READ, "stdout")

    def terminate(self, *_):
        # Pod deletion: end now; the kernel ends the rest of the Pod with us.
        os._exit(143)

    def run(self):
        while self.status is None:
            self.update()
            for key, ev in self.sel.select():
                getattr(self, "on_" + key.data)(ev)
            self.reap()
        self.finish()

    def update(self):
        """Registers interest according to buffers (back-pressure)."""
        if self.child is None:
            return
        want_out = self.stdout_open and self.queued < self.limit
        self.modify(self.stdout, selectors.EVENT_READ if want_out else 0, "stdout")
        if self.conn is not None:
            ev = 0 if self.stdin_pending else selectors.EVENT_READ
            if self.queue:
                ev |= selectors.EVENT_WRITE
            self.modify(self.conn, ev, "conn")
        self.modify(self.stdin, selectors.EVENT_WRITE if self.stdin_pending else 0, "stdin")

    def modify(self, fobj, events, data):
        try:
            key = self.sel.get_key(fobj)
        except (KeyError, ValueError):
            key = None
        if key is None:
            if events:
                self.sel.register(fobj, events, data)
        elif not events:
            self.sel.unregister(fobj)
        elif key.events != events:
            self.sel.modify(fobj, events, data)

    def on_signal(self, _):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def reap(self):
        while self.child is not None:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child.pid:
                self.status = os.waitstatus_to_exitcode(st)
                if self.status < 0:
                    self.status = 128 - self.status

    def on_accept(self, _):
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        if self.conn is not None:
            # Takeover: tell the old connection why, then drop it. A frame
            # it had begun to receive is lost to it; the rest go to the new one.
            try:
                self.conn.send(frame(b"T"))
            except OSError:
                pass
            self.drop()
        self.conn = conn
        if self.child is None:
            self.spawn()
        self.inbuf = bytearray()
        if self.first_sent and self.out.first is not None:
            self.push(self.out.first, front=True)
        self.unacked = 0
        hello = frame(b"A")  # attached: this connection is now the current one
        self.queue.insert(0, hello)
        self.queued += len(hello)

    def drop(self):
        self.modify(self.conn, 0, "conn")
        self.conn.close()
        self.conn = None
        self.inbuf = bytearray()
        if self.sent:
            self.queued -= len(self.queue[0]) - self.sent
            self.queue.pop(0)
            self.sent = 0

    def push(self, unit, front=False):
        f = frame(b"o", unit)
        if unit is self.out.first and self.first_frame is None:
            self.first_frame = f
        if front:
            self.queue.insert(0, f)
        else:
            self.queue.append(f)
        self.queued += len(f)

    def on_stdout(self, _):
        try:
            data = os.read(self.stdout, READ)
        except BlockingIOError:
            return
        if not data:
            self.stdout_open = False
            self.modify(self.stdout, 0, "stdout")
            rest = self.out.rest()
            if rest:
                self.push(rest)
            return
        for unit in self.out.feed(data):
            self.push(unit)

    def on_conn(self, ev):
        if ev & selectors.EVENT_WRITE and self.queue:
            self.flush_some()
        if self.conn is not None and ev & selectors.EVENT_READ:
            self.read_conn()

    def flush_some(self):
        while self.queue and self.conn is not None:
            head = self.queue[0]
            try:
                n = self.conn.send(head[self.sent :])
            except BlockingIOError:
                return
            except OSError:
                self.drop()
                return
            if head is self.first_frame:
                self.first_sent = True
            self.sent += n
            if self.sent == len(head):
                self.queue.pop(0)
                self.queued -= len(head)
                self.sent = 0

    def read_conn(self):
        try:
            data = self.conn.recv(READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.drop()  # detached: the child goes on; a partial frame is discarded
            return
        self.inbuf += data
        while len(self.inbuf) >= 5:
            kind = self.inbuf[:1]
            n = struct.unpack(">I", self.inbuf[1:5])[0]
            if kind not in (b"d", b"c") or n > IN_MAX:
                log("bad frame from connection; dropping it")
                self.drop()
                return
            if len(self.inbuf) < 5 + n:
                return
            payload = bytes(self.inbuf[5 : 5 + n])
            del self.inbuf[: 5 + n]
            if self.stdin_closing:
                continue
            if kind == b"c":
                self.stdin_closing = True
                if not self.stdin_pending:
                    self.close_stdin()
            elif self.stdin < 0:
                self.unacked += len(payload)  # stdin is closed: discarded, but acknowledged
                self.ack(True)
            else:
                self.stdin_pending += payload
                self.write_stdin()

    def on_stdin(self, _):
        self.write_stdin()

    def write_stdin(self):
        while self.stdin_pending:
            try:
                n = os.write(self.stdin, self.stdin_pending[:READ])
            except BlockingIOError:
                self.ack(False)
                return
            except OSError:  # the child closed its stdin: discard
                n = len(self.stdin_pending)
            del self.stdin_pending[:n]
            self.unacked += n
        self.ack(True)
        if self.stdin_closing:
            self.close_stdin()

    def ack(self, drained):
        if self.conn is not None and self.unacked and (drained or self.unacked >= 1 << 16):
            f = frame(b"a", struct.pack(">I", self.unacked))
            self.queue.append(f)
            self.queued += len(f)
            self.unacked = 0

    def close_stdin(self):
        if self.stdin >= 0:
            self.modify(self.stdin, 0, "stdin")
            os.close(self.stdin)
            self.child.stdin = None
            self.stdin = -1
            self.stdin_pending = bytearray()

    def finish(self):
        # The child is gone: pass on what it wrote (a grandchild may still
        # hold its stdout open, so read only what is there now), then end.
        while self.stdout_open:
            try:
                data = os.read(self.stdout, READ)
            except BlockingIOError:
                break
            if not data:
                break
            for unit in self.out.feed(data):
                self.push(unit)
        rest = self.out.rest()
        if rest:
            self.push(rest)
        self.queue.append(frame(b"X", struct.pack(">I", self.status & 0xFFFFFFFF)))
        if self.conn is not None:
            self.conn.setblocking(True)
            self.conn.settimeout(30)
            try:
                if self.sent:
                    self.conn.sendall(self.queue.pop(0)[self.sent :])
                for f in self.queue:
                    self.conn.sendall(f)
                self.conn.shutdown(socket.SHUT_WR)
                # Wait for the connector to read it all and hang up.
                while self.conn.recv(READ):
                    pass
            except OSError:
                pass
        sys.exit(self.status)


if __name__ == "__main__":
    k = Keeper(json.loads(sys.argv[1]))
    k.start()
    k.run()
