"""Running one cell of user code in the session's persistent namespace."""

import ast
import builtins
import linecache
import signal
import sys
import traceback
import types

from . import wire

# Frames from these files are the runtime's own and are cut from tracebacks.
RUNTIME_PREFIX = "/codemode/"

# code.co_flags bit set when top-level await made the cell a coroutine
# (inspect.CO_COROUTINE; inspect itself is slow to import).
_CO_COROUTINE = 0x80

_TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


class Outcome:
    __slots__ = ("status", "exit_code", "error")

    def __init__(self, status, exit_code=0, error=""):
        self.status = status
        self.exit_code = exit_code
        self.error = error


class Runner:
    """Compiles and runs cells; owns the user namespace and the event loop."""

    def __init__(self, namespace, display=None, explain=None):
        self.namespace = namespace
        self.display = display
        # explain(exc) may return a clearer exception for one that ended a
        # cell (an unknown mcp_ name, the process limit), or None.
        self.explain = explain
        self.executing = False
        self._loop = None
        signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum, frame):
        # The host interrupts a cell with SIGINT (through the runtime's channel
        # thread). Outside a cell the runtime's own code must not be disturbed.
        if self.executing and not wire.uninterrupted.deferred():
            raise KeyboardInterrupt

    def run(self, code, filename):
        """Run one cell and return its Outcome. Output goes to fd 1/2."""
        # Registering the source lets tracebacks show cell lines and lets
        # inspect.getsource() find functions defined in cells.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            body, last = self._compile(code, filename)
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
            # The cell never ran: only the compiler's message matters, not
            # the frames of the compile call.
            exc.__traceback__ = None
            return self._report(exc, "error", 1)
        if signal.getsignal(signal.SIGINT) is not self._on_sigint:
            signal.signal(signal.SIGINT, self._on_sigint)
        self.executing = True
        try:
            self._execute(body)
            if last is not None:
                value = self._execute(last)
                if value is not None and not getattr(type(value), "_codemode_silent", False):
                    if self.display is not None and self.display.is_image(value):
                        self.display.show_image(value)
                    else:
                        sys.displayhook(value)
        except SystemExit as exc:
            return self._exit(exc)
        except KeyboardInterrupt as exc:
            return self._report(exc, "interrupted", 1)
        except BaseException as exc:  # noqa: B036 - user code may raise anything
            return self._report(self._explained(exc), "error", 1)
        finally:
            self.executing = False
        return Outcome("ok")

    def _explained(self, exc):
        if self.explain is None:
            return exc
        try:
            better = self.explain(exc)
        except Exception:
            return exc
        if better is None:
            return exc
        better.__traceback__ = exc.__traceback__
        better.__suppress_context__ = True
        return better

    @staticmethod
    def _compile(code, filename):
        try:
            tree = ast.parse(code, filename, "exec")
        except IndentationError:
            # Code pasted as an indented block: run it as if it were not.
            import textwrap

            dedented = textwrap.dedent(code)
            if dedented == code:
                raise
            tree = ast.parse(dedented, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            # Echo the value of a trailing expression, like a REPL.
            last = ast.Expression(tree.body.pop().value)
            last = compile(last, filename, "eval", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)
        body = compile(tree, filename, "exec", flags=_TOP_LEVEL_AWAIT, dont_inherit=True)
        return body, last

    def _execute(self, code):
        result = eval(code, self.namespace)
        if code.co_flags & _CO_COROUTINE:
            result = self._run_coroutine(result)
        return result

    def loop(self):
        """The session's event loop, created on first use (asyncio is slow to import)."""
        if self._loop is None:
            import asyncio

            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
        return self._loop

    def _run_coroutine(self, coro):
        import asyncio

        loop = self.loop()
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except KeyboardInterrupt:
            # The interrupt may have landed while the loop waited for I/O; the
            # cell's task is then still pending. Cancel it and let it unwind.
            if not task.done():
                task.cancel()
                try:
                    loop.run_until_complete(task)
                except (asyncio.CancelledError, KeyboardInterrupt):
                    pass
                except BaseException:
                    pass
            raise

    @staticmethod
    def _exit(exc):
        code = exc.code
        if code is None:
            return Outcome("ok")
        if isinstance(code, int) and not isinstance(code, bool):
            if code == 0:
                return Outcome("ok")
            return Outcome("exit", code, "SystemExit: %d" % code)
        # sys.exit("message") prints the message and exits with 1, as Python does.
        print(code, file=sys.stderr)
        return Outcome("exit", 1, "SystemExit: %s" % (code,))

    @staticmethod
    def _report(exc, status, exit_code):
        te = traceback.TracebackException.from_exception(exc)
        _strip_runtime_frames(te)
        lines = list(te.format())
        try:
            sys.stderr.write("".join(lines))
            sys.stderr.flush()
        except Exception:
            pass
        summary = "".join(te.format_exception_only()).strip().splitlines()
        return Outcome(status, exit_code, summary[-1] if summary else type(exc).__name__)


def _is_cell(filename):
    return filename.startswith("<cell-")


def _strip_runtime_frames(te, seen=None):
    """Remove the runtime's frames from te and its chained exceptions, and
    the plumbing (event loop, exec) above the first frame of user code."""
    seen = seen if seen is not None else set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        kept = [f for f in te.stack if not f.filename.startswith(RUNTIME_PREFIX)]
        first = next((i for i, f in enumerate(kept) if _is_cell(f.filename)), 0)
        te.stack = traceback.StackSummary.from_list(kept[first:])
        for group in getattr(te, "exceptions", None) or ():
            _strip_runtime_frames(group, seen)
        if te.__cause__ is not None:
            _strip_runtime_frames(te.__cause__, seen)
        te = te.__context__


def new_namespace(extra):
    """A fresh ``__main__`` module for user code (pickle and multiprocessing
    look functions up there)."""
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    module.__dict__.update(extra)
    sys.modules["__main__"] = module
    return module.__dict__
