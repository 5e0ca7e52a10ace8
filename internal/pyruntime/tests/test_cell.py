import sys
import unittest

import helpers  # noqa: F401  (puts the runtime on sys.path)
from _codemode import cell


class CellTest(unittest.TestCase):
    def setUp(self):
        self.ns = {"__name__": "__main__", "__builtins__": __builtins__}
        self.runner = cell.Runner(self.ns)

    def run_cell(self, code, name="<cell-t>"):
        return self.runner.run(code, name)

    def test_state_persists(self):
        self.assertEqual(self.run_cell("x = 41").status, "ok")
        self.assertEqual(self.run_cell("x += 1").status, "ok")
        self.assertEqual(self.ns["x"], 42)

    def test_exception_outcome(self):
        out = self.run_cell("raise KeyError('k')")
        self.assertEqual((out.status, out.exit_code, out.error), ("error", 1, "KeyError: 'k'"))

    def test_system_exit_codes(self):
        cases = [("import sys; sys.exit()", "ok", 0), ("import sys; sys.exit(0)", "ok", 0),
                 ("import sys; sys.exit(4)", "exit", 4), ("import sys; sys.exit('bye')", "exit", 1),
                 ("raise SystemExit(True)", "exit", 1)]
        for code, status, exit_code in cases:
            with self.subTest(code=code):
                out = self.run_cell(code)
                self.assertEqual((out.status, out.exit_code), (status, exit_code))

    def test_syntax_error_is_reported_without_stack(self):
        out = self.run_cell("def f(:\n  pass")
        self.assertEqual(out.status, "error")
        self.assertTrue(out.error.startswith("SyntaxError"), out.error)

    def test_indented_block_runs(self):
        out = self.run_cell("    x = 1\n    if x:\n        y = x + 1\n")
        self.assertEqual(out.status, "ok", out.error)
        self.assertEqual(self.ns["y"], 2)
        out = self.run_cell("x = 1\n  y = 2\n")  # inconsistent indentation stays an error
        self.assertTrue(out.error.startswith("IndentationError"), out.error)

    def test_explain_replaces_uncaught_exceptions(self):
        self.runner.explain = lambda exc: ValueError("clearer") if isinstance(exc, KeyError) else None
        self.assertEqual(self.run_cell("{}['k']").error, "ValueError: clearer")
        self.assertEqual(self.run_cell("1/0").error, "ZeroDivisionError: division by zero")
        self.assertEqual(self.run_cell("try:\n    {}['k']\nexcept KeyError:\n    pass").status, "ok")

    def test_top_level_await(self):
        out = self.run_cell("import asyncio\nawait asyncio.sleep(0)\nresult = await asyncio.sleep(0, 'v')")
        self.assertEqual(out.status, "ok")
        self.assertEqual(self.ns["result"], "v")

    def test_last_expression_goes_to_displayhook(self):
        seen = []
        old = sys.displayhook
        sys.displayhook = seen.append
        try:
            self.run_cell("y = 2\ny * 21")
            self.run_cell("None")
            self.run_cell("z = 1")
        finally:
            sys.displayhook = old
        self.assertEqual(seen, [42])  # None and statements are not echoed

    def test_source_is_registered_for_inspect(self):
        self.run_cell("def helper(a):\n    return a * 2\n", "<cell-src>")
        import inspect
        self.assertIn("return a * 2", inspect.getsource(self.ns["helper"]))

    def test_runtime_frames_are_stripped(self):
        import traceback
        try:
            exec(compile("1/0", "<cell-z>", "exec"), {})
        except ZeroDivisionError as exc:
            te = traceback.TracebackException.from_exception(exc)
        te.stack = traceback.StackSummary.from_list(
            [traceback.FrameSummary(cell.RUNTIME_PREFIX + "_codemode/main.py", 1, "run")] + list(te.stack))
        cell._strip_runtime_frames(te)
        names = [f.filename for f in te.stack]
        self.assertNotIn(cell.RUNTIME_PREFIX + "_codemode/main.py", names)
        self.assertIn("<cell-z>", names)


if __name__ == "__main__":
    unittest.main()
