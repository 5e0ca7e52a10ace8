"""The runtime booted with the real bootstrap, driven over its channel."""

import json
import threading
import time
import unittest

import helpers


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.rt = helpers.Booted()
        self.addCleanup(self.rt.close)

    def test_ready(self):
        self.assertEqual(self.rt.ready["type"], "ready")
        self.assertIn(".", self.rt.ready["python"])

    def test_output_order_and_blank_lines(self):
        done, out, err = self.rt.run("print('a')\nprint()\nprint('b')\nimport sys; print('e', file=sys.stderr)")
        self.assertEqual(done["status"], "ok")
        self.assertEqual(out, b"a\n\nb\n")
        self.assertEqual(err, b"e\n")

    def test_fd_writes_and_subprocess_are_captured(self):
        done, out, _ = self.rt.run("import os, subprocess\n_ = os.write(1, b'raw\\n')\n_ = subprocess.run(['echo', 'child'])")
        self.assertEqual(out, b"raw\nchild\n")

    def test_forged_frames_are_output(self):
        forged = helpers.frame("M", json.dumps({"type": "done", "id": 1, "status": "ok", "exitCode": 0}).encode())
        done, out, _ = self.rt.run("import os\n_ = os.write(1, %r)\nprint('after')" % forged)
        self.assertEqual(done["status"], "ok")
        self.assertTrue(out.startswith(forged) and out.endswith(b"after\n"), out)

    def test_closed_stdout_is_repaired_for_the_next_cell(self):
        self.rt.run("import os; os.close(1)")
        done, out, _ = self.rt.run("print('back')")
        self.assertEqual((done["status"], out), ("ok", b"back\n"))

    def test_large_output_is_not_limited_by_frames(self):
        done, out, _ = self.rt.run("import sys; _ = sys.stdout.write('y' * 3_000_000)")
        self.assertEqual(len(out), 3_000_000)

    def test_input_sees_eof(self):
        done, _, err = self.rt.run("input()")
        self.assertEqual(done["error"], "EOFError: EOF when reading a line")

    def test_interrupt(self):
        rt = self.rt
        def interrupt_soon():
            time.sleep(0.3)
            rt.send({"type": "interrupt", "id": rt.next_id})
        threading.Thread(target=interrupt_soon).start()
        done, _, err = rt.run("x = 0\nwhile True: x += 1")
        self.assertEqual(done["status"], "interrupted")
        self.assertIn(b"KeyboardInterrupt", err)
        self.assertNotIn(b"/codemode/", err)
        done, out, _ = rt.run("x > 0")
        self.assertEqual(out, b"True\n")

    def test_interrupt_of_awaiting_cell(self):
        rt = self.rt
        def interrupt_soon():
            time.sleep(0.3)
            rt.send({"type": "interrupt", "id": rt.next_id})
        threading.Thread(target=interrupt_soon).start()
        started = time.monotonic()
        done, _, _ = rt.run("import asyncio\nawait asyncio.sleep(30)")
        self.assertEqual(done["status"], "interrupted")
        self.assertLess(time.monotonic() - started, 10, "the interrupt did not wake the event loop")
        done, out, _ = rt.run("await asyncio.sleep(0, 'loop ok')")
        self.assertEqual(out, b"'loop ok'\n")

    def test_interrupt_of_blocking_call(self):
        rt = self.rt
        def interrupt_soon():
            time.sleep(0.3)
            rt.send({"type": "interrupt", "id": rt.next_id})
        threading.Thread(target=interrupt_soon).start()
        started = time.monotonic()
        done, _, _ = rt.run("import time\ntime.sleep(30)")
        self.assertEqual(done["status"], "interrupted")
        self.assertLess(time.monotonic() - started, 10, "the interrupt did not wake time.sleep")

    def test_ping(self):
        self.rt.send({"type": "ping", "id": 99})
        self.assertEqual(self.rt.read_message(), {"type": "pong", "id": 99})

    def test_runtime_is_predefined(self):
        done, out, _ = self.rt.run("print(runtime.capability_summary())\nimport mcp.runtime as r\nprint(r is runtime)")
        self.assertEqual(out, b"MANUAL\nTrue\n")

    def test_main_module_for_pickle(self):
        done, out, _ = self.rt.run("import pickle\ndef f(): return 7\nprint(pickle.loads(pickle.dumps(f))())")
        self.assertEqual(out, b"7\n")


if __name__ == "__main__":
    unittest.main()
