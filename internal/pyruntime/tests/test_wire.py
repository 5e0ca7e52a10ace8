"""Frames: an interrupt never cuts one being written, and answers on the
direct reply pipe are read whole however they arrive."""

import json
import os
import signal
import threading
import time
import unittest
from unittest import mock

import helpers  # noqa: F401 (puts the runtime on sys.path)
from _codemode import wire


class UninterruptedTest(unittest.TestCase):
    def setUp(self):
        # The cell's SIGINT handler, in short.
        def on_sigint(signum, frame):
            if not wire.uninterrupted.deferred():
                raise KeyboardInterrupt

        self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, on_sigint))

    def test_an_interrupt_during_a_block_comes_after_it(self):
        done = []
        with self.assertRaises(KeyboardInterrupt):
            with wire.uninterrupted:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):  # the handler runs between these bytecodes
                    pass
                done.append("the whole block")
        self.assertEqual(done, ["the whole block"])
        # Outside a block the interrupt is immediate again.
        with self.assertRaises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass

    def test_a_frame_is_written_whole(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        data = wire.frame(wire.MESSAGE, wire.encode_message({"x": "y" * 100}))

        def interrupting_write(fd, view):
            os.kill(os.getpid(), signal.SIGINT)  # lands mid-frame: one byte at a time
            return real_write(fd, view[:1])

        real_write, os.write = os.write, interrupting_write
        try:
            with self.assertRaises(KeyboardInterrupt):
                wire.write_all(w, data)
        finally:
            os.write = real_write
        self.assertEqual(os.read(r, len(data) + 1), data)

    def test_an_exception_in_the_block_is_not_replaced(self):
        with self.assertRaises(ValueError):
            with wire.uninterrupted:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):
                    pass
                raise ValueError("the block's own")

    def test_a_child_forked_by_another_thread_has_it_as_main_thread(self):
        # After a fork the forking thread is the child's main thread, the
        # only one the host's interrupt reaches.
        status = []

        def fork():
            pid = os.fork()
            if pid == 0:
                os._exit(0 if wire.uninterrupted.__enter__() else 1)
            status.append(os.waitpid(pid, 0)[1])

        t = threading.Thread(target=fork)
        t.start()
        t.join()
        self.assertEqual(status, [0])
        with wire.uninterrupted as counted:  # and this process's main thread is still its own
            self.assertTrue(counted)


class MessageCodingTest(unittest.TestCase):
    """Messages are encoded and decoded as json.dumps and json.loads would,
    without their Python layers where the C encoder and scanner are there."""

    MESSAGES = [
        {"type": "rpc", "id": 1, "method": "call_tool", "params": {"server": "s", "tool": "t", "arguments": {}}},
        {"nested": [1, 2.5, -3e300, [True, False, None], {"k": []}], "big": 2 ** 70},
        {"text": "caf\u00e9 \u2192 \U0001f600", "quote": 'a"b\\c\n\t\x00'},
        {"lone surrogate": "\ud800", "\udc00 key": 1},
        {"floats": [float("nan"), float("inf"), -float("inf"), 0.1]},
        {"tuple": (1, 2), 1: "int key", 2.5: "float key", None: "null key", True: "bool key"},
        {},
    ]

    def codings(self):
        yield "C encoder", wire._unchecked
        yield "JSONEncoder", None

    def test_encoded_as_json_dumps(self):
        for name, encoder in self.codings():
            with self.subTest(name), mock.patch.object(wire, "_unchecked", encoder):
                for m in self.MESSAGES:
                    want = json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
                    self.assertEqual(wire.encode_message(m), want)

    def test_what_json_cannot_carry_is_refused(self):
        loop = {}
        loop["self"] = loop
        for name, encoder in self.codings():
            with self.subTest(name), mock.patch.object(wire, "_unchecked", encoder):
                with self.assertRaisesRegex(ValueError, "Circular reference"):
                    wire.encode_message(loop)
                with self.assertRaisesRegex(TypeError, "not JSON serializable"):
                    wire.encode_message({"x": object()})
                deep = []
                for _ in range(100000):
                    deep = [deep]
                with self.assertRaises(RecursionError):
                    wire.encode_message(deep)

    def test_decoded_as_json_loads(self):
        payloads = [wire.encode_message(m) for m in self.MESSAGES[:4]] + [
            b' {"a": 1}', b'{"a": 1}\n', b'[1, "x"]', b"3", b'"s"', b"NaN", '{"\u00e9": "\u2192"}'.encode()]
        for p in payloads:
            with self.subTest(p):
                self.assertEqual(repr(wire.decode_message(p)), repr(json.loads(p)))

    def test_what_is_not_json_is_refused(self):
        for p in [b"", b"{", b'{"a": 1} x', b'{"a": 1}{}', b"\xff", b'"\xff"', b'{"a": tru}']:
            with self.subTest(p), self.assertRaises(ValueError):
                wire.decode_message(p)


class DirectReplyTest(unittest.TestCase):
    """Answers on the direct reply pipe, however the host's writes arrive."""

    def wait_for(self, rid, *writes):
        from _codemode import rpc

        r, w = os.pipe()
        self.addCleanup(os.close, r)
        direct = rpc._Direct(requests=-1, replies=r)

        def write():
            for chunk in writes:
                os.write(w, chunk)
                time.sleep(0.01)  # a read of its own each
            os.close(w)

        writer = threading.Thread(target=write)
        writer.start()
        self.addCleanup(writer.join)
        return direct.wait(rid)

    def answer(self, rid):
        return wire.frame(wire.MESSAGE, wire.encode_message({"type": "rpc_result", "id": rid, "ok": True}))

    def test_whole(self):
        self.assertEqual(self.wait_for(1, self.answer(1))["id"], 1)

    def test_in_pieces(self):
        frame = self.answer(2)
        self.assertEqual(self.wait_for(2, frame[:3], frame[3:9], frame[9:])["id"], 2)

    def test_an_abandoned_answer_first_in_the_same_read(self):
        self.assertEqual(self.wait_for(4, self.answer(3) + self.answer(4))["id"], 4)

    def test_other_frames_are_refused(self):
        with self.assertRaises(ValueError):
            self.wait_for(5, wire.frame(wire.STDOUT, b"x"))

    def test_closed(self):
        with self.assertRaises(wire.ChannelClosed):
            self.wait_for(6, self.answer(5)[:4])


if __name__ == "__main__":
    unittest.main()
