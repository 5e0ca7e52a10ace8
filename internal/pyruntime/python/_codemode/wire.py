"""Frames between the runtime and the codemode host.

A frame is one kind byte, a big-endian uint32 payload length and the payload.
Kind ``M`` carries a JSON message, ``O``/``E`` carry raw stdout/stderr bytes.
The Go side of this format lives in internal/wire.
"""

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
        data = _HEADER.pack(kind, len(payload)) + payload
        view = memoryview(data)
        with self._lock:
            while view:
                n = os.write(self._wfd, view)
                view = view[n:]

    def send_message(self, message):
        # ensure_ascii=False keeps payloads small; "replace" turns lone
        # surrogates (which JSON cannot carry in UTF-8) into "?".
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.send(MESSAGE, text.encode("utf-8", "replace"))

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
        return json.loads(payload)
