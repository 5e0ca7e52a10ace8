"""Frames: an interrupt never cuts one being written, and answers on the
direct reply pipe are read whole however they arrive."""

import os
import signal
import threading
import time
import unittest

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


if __name__ == "__main__":
    unittest.main()


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
