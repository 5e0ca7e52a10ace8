"""Frames between the runtime and the codemode host.

A frame is one kind byte, a big-endian uint32 payload length and the payload.
Kind ``M`` carries a JSON message, ``O``/``E`` carry raw stdout/stderr bytes.
The Go side of this format lives in internal/wire.
"""

import _thread
import json
import os
import struct
import threading

MESSAGE = ord("M")
STDOUT = ord("O")
STDERR = ord("E")

_HEADER = struct.Struct(">BI")


class ChannelClosed(Exception):
    """The host closed the channel."""


class Uninterrupted:
    """A block of the main thread that the host's interrupt (a SIGINT to the
    main thread, raised as KeyboardInterrupt by the cell's handler) must not
    cut: writing a frame, which the host cannot read if it stops halfway.
    The handler asks ``deferred()`` first; an interrupt that came during the
    block is raised when it ends. Other threads get no SIGINT."""

    def __init__(self):
        self._depth = 0
        self._pending = False
        # Compared by ident: every tool call enters a block, and
        # threading.current_thread() is two Python calls more each time.
        self._main = threading.main_thread().ident
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self):
        self._main = threading.main_thread().ident  # the forking thread is the child's main thread

    def deferred(self):
        """Whether an interrupt must wait (it is then raised at the end)."""
        if self._depth and _thread.get_ident() == self._main:
            self._pending = True
            return True
        return False

    def __enter__(self):
        if _thread.get_ident() == self._main:
            self._depth += 1
            return True
        return False

    def __exit__(self, *exc):
        if _thread.get_ident() != self._main:
            return False
        self._depth -= 1
        if not self._depth and self._pending:
            self._pending = False
            if exc[0] is None:
                raise KeyboardInterrupt
        return False


uninterrupted = Uninterrupted()


def write_all(fd, data):
    """Write all of data to fd: a whole frame, never part of one."""
    with uninterrupted:
        n = os.write(fd, data)  # a pipe takes a small frame whole
        if n < len(data):
            view = memoryview(data)[n:]
            while view:
                view = view[os.write(fd, view):]


def frame(kind, payload):
    """The bytes of one frame."""
    return _HEADER.pack(kind, len(payload)) + payload


# json.dumps with options builds an encoder per call, and JSONEncoder.encode
# adds two Python calls and a fresh C encoder with its own table of the
# containers seen (for circular references). Where this Python has the C
# encoder, one without that table encodes every message; a circular
# structure then ends in a RecursionError, and the full encoder says what
# was wrong.
_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
try:  # with the arguments JSONEncoder.iterencode gives it
    _unchecked = json.encoder.c_make_encoder(None, _encoder.default, json.encoder.encode_basestring, None,
                                             _encoder.key_separator, _encoder.item_separator, _encoder.sort_keys,
                                             _encoder.skipkeys, _encoder.allow_nan)
except TypeError:  # no C encoder (None), or one that takes other arguments
    _unchecked = None


def encode_message(message):
    """The payload of a message frame: compact JSON in UTF-8 (lone
    surrogates, which JSON cannot carry in UTF-8, become "?")."""
    if _unchecked is None:
        text = _encoder.encode(message)
    else:
        try:
            text = "".join(_unchecked(message, 0))
        except RecursionError:  # circular, or too deep: the full encoder says which
            text = _encoder.encode(message)
    return text.encode("utf-8", "replace")


# The C scanner behind json.loads, without loads' three Python calls and two
# regular expressions around it.
_scan = json.JSONDecoder().scan_once


def decode_message(payload):
    """The message of a frame's payload (compact JSON in UTF-8, as the host
    writes it); anything else is left to json.loads, which raises what is
    wrong with it."""
    try:
        text = payload.decode("utf-8")
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError):
        pass
    return json.loads(payload)


class Channel:
    """Frames over a pair of private file descriptors.

    ``send`` may be called from any thread; one frame is written with as few
    write calls as the kernel allows and never interleaves with another.
    ``recv`` must only be called from one thread.
    """

    def __init__(self, rfd, wfd):
        self._rfd = rfd
        self._wfd = wfd
        self._lock = threading.Lock()

    def send(self, kind, payload):
        data = frame(kind, payload)
        with self._lock:
            write_all(self._wfd, data)

    def send_message(self, message):
        self.send(MESSAGE, encode_message(message))

    def _read_exact(self, n):
        chunks = []
        while n:
            chunk = os.read(self._rfd, n)
            if not chunk:
                raise ChannelClosed()
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self):
        """Return the next (kind, payload); raise ChannelClosed at EOF."""
        kind, size = _HEADER.unpack(self._read_exact(_HEADER.size))
        return kind, self._read_exact(size) if size else b""

    def recv_message(self):
        kind, payload = self.recv()
        if kind != MESSAGE:
            raise ValueError("unexpected frame kind %r from host" % chr(kind))
        return decode_message(payload)
