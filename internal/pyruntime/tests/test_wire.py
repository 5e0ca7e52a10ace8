"""The frame writer: an interrupt never cuts a frame."""

import os
import signal
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
