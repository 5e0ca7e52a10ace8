"""Capture of everything written to fd 1 and 2.

fd 1 and 2 point at pipes whose read ends only the runtime holds. A pump
thread forwards what arrives as STDOUT/STDERR frames, so print(), os.write,
C extensions and subprocesses are all captured and none of them can write a
frame. ``sync`` forwards what is already in the pipes before the runtime
reports the end of a cell, so a cell's output is never split from its result.
"""

import array
import fcntl
import io
import os
import select
import sys
import termios
import threading

from . import wire

_CHUNK = 65536


def _pending(fd):
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf, True)
    return buf[0]


class Capture:
    def __init__(self, channel):
        self._channel = channel
        self._lock = threading.Lock()  # held while a chunk is read and forwarded
        self._streams = {}  # read fd -> frame kind
        self._targets = []  # (stdio fd, private write fd) to restore if user code breaks them
        for target, kind in ((1, wire.STDOUT), (2, wire.STDERR)):
            rfd, wfd = os.pipe()
            os.set_blocking(rfd, False)
            os.dup2(wfd, target)  # the stdio fd stays inheritable for subprocesses
            self._streams[rfd] = kind
            self._targets.append((target, wfd))  # os.pipe fds are non-inheritable
        self._poll = select.poll()
        for rfd in self._streams:
            self._poll.register(rfd, select.POLLIN)
        threading.Thread(target=self._pump, name="codemode-output", daemon=True).start()

    def install_text_streams(self):
        """Point sys.stdout/sys.stderr at fd 1/2, unbuffered enough to stream."""
        sys.stdout = self._text_stream(1)
        sys.stderr = self._text_stream(2)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr

    @staticmethod
    def _text_stream(fd):
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace",
                                line_buffering=True)

    def repair(self):
        """Re-point fd 1/2 at the capture pipes if user code closed or moved them."""
        for target, wfd in self._targets:
            try:
                same = os.path.samestat(os.fstat(target), os.fstat(wfd))
            except OSError:
                same = False
            if not same:
                os.dup2(wfd, target)

    def _forward(self, rfd, limit=_CHUNK):
        try:
            data = os.read(rfd, limit)
        except BlockingIOError:
            return 0
        if data:
            self._channel.send(self._streams[rfd], data)
        return len(data)

    def _pump(self):
        while True:
            for rfd, _ in self._poll.poll():
                with self._lock:
                    self._forward(rfd)

    def sync(self):
        """Forward everything written to fd 1/2 so far.

        Only the bytes already in the pipes are taken, so a background writer
        cannot keep the cell from finishing.
        """
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        with self._lock:
            for rfd in self._streams:
                left = _pending(rfd)
                while left > 0:
                    n = self._forward(rfd, min(left, _CHUNK))
                    if n == 0:
                        break
                    left -= n
