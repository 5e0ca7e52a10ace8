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



class PreloadTest(unittest.TestCase):
    """Modules named in the boot frame are imported before the ready message."""

    def boot(self, preload):
        rt = helpers.Booted(preload=preload)
        self.addCleanup(rt.close)
        return rt

    def test_preloaded_module_is_imported_at_the_first_call(self):
        rt = self.boot(["colorsys", "xml.dom.minidom"])
        done, out, err = rt.run("import sys; print('colorsys' in sys.modules, 'xml.dom.minidom' in sys.modules)")
        self.assertEqual(done["status"], "ok", err)
        self.assertEqual(out, b"True True\n")

    def test_missing_modules_are_skipped_quietly(self):
        rt = self.boot(["no_such_module_cm", "colorsys.no_such_sub", "colorsys"])
        done, out, err = rt.run("import sys; print('no_such_module_cm' in sys.modules, 'colorsys' in sys.modules)")
        self.assertEqual(done["status"], "ok", err)
        self.assertEqual((out, err), (b"False True\n", b""))

    def test_what_an_import_prints_never_reaches_a_cell(self):
        # A module that prints on import and then fails.
        import os
        import tempfile

        d = tempfile.mkdtemp()
        with open(os.path.join(d, "chatty_cm.py"), "w") as f:
            f.write("import os, sys\nprint('hello')\nos.write(2, b'raw\\n')\nraise ValueError('broken')\n")
        rt = helpers.Booted(config={"manual": "M"}, preload=["chatty_cm"], pythonpath=d)
        self.addCleanup(rt.close)
        done, out, err = rt.run("print('cell')")
        self.assertEqual((done["status"], out, err), ("ok", b"cell\n", b""))
        diag = rt.stop_and_read_stderr()
        self.assertIn(b"hello", diag)
        self.assertIn(b"raw", diag)
        self.assertIn(b"ValueError", diag)


if __name__ == "__main__":
    unittest.main()
