"""Requests from sandboxed code to the host (tool calls, discovery).

Calls are multiplexed by id over the channel, so any number may be in
flight: ``acall`` from coroutines (``asyncio.gather`` of N tool calls runs
them concurrently on the host) and ``call`` from synchronous code.
"""

import _thread
import itertools
import os
import threading
import weakref

from . import wire


class MCPError(RuntimeError):
    """A failed MCP operation: transport, timeout, tool error, unknown server
    or tool. ``server`` and ``tool`` say which, ``kind`` what went wrong."""

    def __init__(self, message, server=None, tool=None, kind=None):
        super().__init__(message)
        self.server = server
        self.tool = tool
        self.kind = kind


# Shown as mcp.runtime.MCPError in tracebacks: that is where users import it from.
MCPError.__module__ = "mcp.runtime"


def _error(msg):
    err = msg.get("error") or {}
    return MCPError(err.get("message", "RPC failed"), err.get("server"), err.get("tool"), err.get("kind"))


def _settle(fut, msg):
    if fut.done():
        return
    if msg.get("ok"):
        fut.set_result(msg.get("result"))
    else:
        fut.set_exception(_error(msg))


def _alone(loop, asyncio):
    """Whether the running task is the only thing the loop could run until
    an RPC's answer arrives: no other task, no callback ready or timed, no
    file descriptor watched but the loop's own wake-up pipe. A loop of
    another implementation (no such attributes) is never alone."""
    try:
        # _fd_to_key is what get_map() wraps, without two Python calls.
        if loop._ready or loop._scheduled or len(loop._selector._fd_to_key) > 1:
            return False
    except AttributeError:
        return False
    if _only_task(asyncio, loop):
        return True
    return len(asyncio.all_tasks(loop)) == 1


def _only_task(asyncio, loop):
    """Whether asyncio's registry of tasks holds the running task and no
    other (done ones not yet freed count): what all_tasks would say,
    without building a set. The registry is 3.11's weak set, or 3.12's
    scheduled and eager tasks; a Python without them gets False."""
    if _registries is None:
        _find_registries(asyncio)
    count = 0
    for r, _ in _registries:
        count += len(r)
    if count != 1:
        return False
    current = asyncio.current_task(loop)
    for r, weak in _registries:
        if (weakref.ref(current) if weak else current) in r:
            return True
    return False


def _find_registries(asyncio):
    """Find asyncio's task registries, once. A weak set is kept as the set
    of weak references it wraps (len and in on the WeakSet are Python
    calls): while the WeakSet is being iterated that set may still hold
    dead references, which only makes a lone task look accompanied."""
    global _registries
    found = []
    for name in ("_all_tasks", "_scheduled_tasks", "_eager_tasks"):
        r = getattr(asyncio.tasks, name, None)
        if isinstance(r, weakref.WeakSet) and isinstance(getattr(r, "data", None), set):
            found.append((r.data, True))
        elif r is not None:
            found.append((r, False))
    _registries = tuple(found)


# asyncio's task registries, found on first use: (set, holds weak references).
_registries = None


class _Direct:
    """The direct pipes (the boot frame's "direct"): the thread that waits
    for an answer writes its request there and reads the answer itself, so
    neither side hands it to another thread. One thread at a time holds
    ``busy``; the others use the channel."""

    def __init__(self, requests, replies):
        self.requests = requests
        self.replies = replies
        self.busy = threading.Lock()
        self.buf = bytearray()  # read but not yet parsed

    def wait(self, rid):
        """Return the result for request rid, dropping those of requests
        abandoned before it."""
        while True:
            msg = wire.decode_message(self._frame())
            if msg.get("id") == rid:
                return msg

    def _frame(self):
        head = wire._HEADER.size
        while True:
            if len(self.buf) >= head:
                kind, size = wire._HEADER.unpack_from(self.buf)
                if kind != wire.MESSAGE:
                    raise ValueError("unexpected frame kind %r on the direct reply pipe" % chr(kind))
                if len(self.buf) >= head + size:
                    payload = bytes(self.buf[head:head + size])
                    del self.buf[:head + size]
                    return payload
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise wire.ChannelClosed()
            if not self.buf and len(chunk) >= head:
                kind, size = wire._HEADER.unpack_from(chunk)
                if kind == wire.MESSAGE and len(chunk) == head + size:
                    return chunk[head:]  # the usual answer: one frame, one read
            self.buf += chunk

    def abandon(self, rid):
        """Read and drop the result of rid, whose caller gave up (an
        interrupt), on a thread of its own, then let the next caller in;
        until then callers use the channel. An interrupt can land between
        a read and keeping what it read: if the pipe no longer parses, it
        is read to its end and dropped, so the host's writes never block,
        and callers use the channel for good."""

        def run():
            try:
                self.wait(rid)
            except wire.ChannelClosed:
                return
            except Exception:
                while os.read(self.replies, 1 << 16):
                    pass
                return
            self.busy.release()

        threading.Thread(target=run, name="codemode-direct-drain", daemon=True).start()


class Client:
    def __init__(self, channel, direct=None):
        self._channel = channel
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending = {}  # id -> callback(msg), called on the channel thread
        self._direct = _Direct(direct["requests"], direct["replies"]) if direct else None

    def _send(self, method, params, on_reply):
        rid = next(self._ids)
        with self._lock:
            self._pending[rid] = on_reply
        try:
            self._channel.send_message({"type": "rpc", "id": rid, "method": method, "params": params})
        except BaseException:
            with self._lock:
                self._pending.pop(rid, None)
            raise
        return rid

    def _forget(self, rid):
        with self._lock:
            self._pending.pop(rid, None)

    def call(self, method, params=None):
        """Block until the host answers; return the result or raise MCPError."""
        direct = self._direct
        if direct is not None and direct.busy.acquire(blocking=False):
            msg = self._call_direct(direct, method, params)
        else:
            msg = self._call_via_channel(method, params)
        if not msg.get("ok"):
            raise _error(msg)
        return msg.get("result")

    def _call_direct(self, direct, method, params):
        """The request and its answer on the direct pipes, by this thread
        (which holds direct.busy, released here or once an abandoned
        answer has been read)."""
        rid = next(self._ids)
        request = wire.frame(wire.MESSAGE, wire.encode_message({"type": "rpc", "id": rid, "method": method, "params": params}))
        sent = False
        try:
            with wire.uninterrupted:  # an interrupt comes once sent is true
                wire.write_all(direct.requests, request)
                sent = True
            msg = direct.wait(rid)
        except BaseException:
            if sent:
                direct.abandon(rid)  # its answer will come: read it off the pipe
            else:
                direct.busy.release()
            raise
        direct.busy.release()
        return msg

    def _call_via_channel(self, method, params):
        # A bare lock is the cheapest cross-thread wake-up Python has: the
        # channel thread releases it when the answer arrives.
        done = _thread.allocate_lock()
        done.acquire()
        box = []

        def on_reply(msg):
            box.append(msg)
            done.release()

        rid = self._send(method, params, on_reply)
        try:
            done.acquire()
        finally:
            self._forget(rid)
        return box[0]

    async def acall(self, method, params=None):
        """Await the host's answer without blocking the event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        if _alone(loop, asyncio):
            # Nothing else in the loop can run before the answer, so wait as
            # synchronous code does: on the direct pipes, or woken by the
            # channel thread, instead of through the loop's self-pipe and a
            # turn of the loop (the asyncio-to-thread hop).
            return self.call(method, params)
        fut = loop.create_future()

        def on_reply(msg):
            loop.call_soon_threadsafe(_settle, fut, msg)

        rid = self._send(method, params, on_reply)
        try:
            return await fut
        finally:
            self._forget(rid)

    def resolve(self, msg):
        with self._lock:
            on_reply = self._pending.pop(msg.get("id"), None)
        if on_reply is not None:
            on_reply(msg)

    def fail_all(self, reason):
        """Fail every pending call (the channel is gone)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for on_reply in pending.values():
            on_reply({"ok": False, "error": {"kind": "transport", "message": reason}})
