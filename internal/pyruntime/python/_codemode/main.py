"""The session server: one persistent interpreter driven by the host.

Threads: the main thread runs cells; ``codemode-channel`` reads frames from
the host (exec requests, interrupts, pings, RPC results); ``codemode-output``
forwards fd 1/2 (see output.py).
"""

import _queue
import os
import signal
import sys
import threading

from . import cell, display, egress, output, rpc, wire

_STDIN, _STDOUT = 0, 1
_PRELOAD_ENV = {"MPLCONFIGDIR": "/tmp/matplotlib", "XDG_CACHE_HOME": "/tmp/cache"}


class Session:
    def __init__(self, config, direct=None):
        self.config = config
        self.diagnostics = os.dup(2)  # the sandbox's own stderr, read by the host's logs
        # Move the channel off stdio before anything else runs: user code
        # writing to fd 1 must reach the capture pipe, never the host's reader.
        self.channel = wire.Channel(os.dup(_STDIN), os.dup(_STDOUT))
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, _STDIN)  # input() sees EOF
        os.close(devnull)
        sys.stdin = open(_STDIN, "r", closefd=False)
        self.capture = output.Capture(self.channel)
        self.capture.install_text_streams()
        self.cells = _queue.SimpleQueue()  # the C queue: the queue module is slow to import
        self.current = 0  # id of the running cell, 0 when idle
        self.main_thread = threading.get_ident()
        self.rpc = rpc.Client(self.channel, direct)

        import mcp.runtime as runtime
        import mcp
        from mcp import state

        self.display = display.Display(self.rpc, config)
        state._attach(self.rpc)
        runtime._attach(self)
        names = runtime._user_globals(mcp)
        names.update(show_image=self.display.show_image, publish=self.display.publish,
                     save_tool=state.save_tool, save_memory=state.save_memory, load_memory=state.load_memory,
                     list_memories=state.list_memories, update_memory=state.update_memory,
                     delete_memory=state.delete_memory)
        self.runner = cell.Runner(cell.new_namespace(names), display=self.display, explain=runtime._explain)
        self._runtime = runtime
        # Agg cannot show windows; figures are returned at the end of the cell.
        import warnings

        warnings.filterwarnings("ignore", message=".*non-interactive.*")

    def preload(self, modules):
        """Import modules before the host gets this interpreter, so the
        session's first import of them is a dictionary lookup. A module that
        is not installed is skipped without a word; what an import prints,
        and any other failure, goes to the host's log, never to a cell."""
        if not modules:
            return
        import importlib

        # The caches these imports build (matplotlib's font list, and
        # fontconfig's, written by the fc-list it runs) go to /tmp, so the
        # session's /workspace starts empty; the environment is restored.
        env = {k: os.environ.get(k) for k in _PRELOAD_ENV}
        for k, v in _PRELOAD_ENV.items():
            os.environ.setdefault(k, v)
        saved = os.dup(1), os.dup(2)
        os.dup2(self.diagnostics, 1)
        os.dup2(self.diagnostics, 2)
        try:
            for name in modules:
                try:
                    importlib.import_module(name)
                except ModuleNotFoundError as exc:
                    if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                        continue  # not installed
                    sys.stderr.write("codemode runtime: preloading %s: %r\n" % (name, exc))
                except Exception as exc:
                    sys.stderr.write("codemode runtime: preloading %s: %r\n" % (name, exc))
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def serve(self):
        try:
            egress.start()
        except OSError as e:
            os.write(self.diagnostics, f"codemode: egress relay not started: {e}\n".encode())
        threading.Thread(target=self._read_channel, name="codemode-channel", daemon=True).start()
        self.channel.send_message({"type": "ready", "python": sys.version.split()[0], "pid": os.getpid()})
        while True:
            try:
                msg = self.cells.get()
                self._run(msg)
            except KeyboardInterrupt:
                continue  # an interrupt that arrived after its cell finished

    def _run(self, msg):
        self.capture.repair()
        if "loaded" in msg:
            self.runner.namespace["LOADED_MCP_SERVERS"] = tuple(msg["loaded"])
        self.current = msg["id"]
        try:
            if msg.get("files"):
                self._write_files(msg["files"])
            outcome = self.runner.run(msg["code"], msg["filename"])
            self._flush_artifacts(outcome)
            self._note_leftovers()
        finally:
            self.current = 0
        self.capture.sync()
        done = {"type": "done", "id": msg["id"], "status": outcome.status, "exitCode": outcome.exit_code}
        if outcome.error:
            done["error"] = outcome.error
        self.channel.send_message(done)

    @staticmethod
    def _write_files(files):
        """Files passed with the call land in the working directory."""
        import base64

        for name, data in files.items():
            path = os.path.normpath(os.path.join("/workspace", name))
            if not path.startswith("/workspace/"):
                raise ValueError("file name %r leaves /workspace" % name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(base64.b64decode(data))

    def _flush_artifacts(self, outcome):
        """Return open figures and new files in /workspace/out; a failure
        here is reported like an error of the cell."""
        try:
            self.display.flush_figures()
            self.display.flush_out_dir()
        except BaseException as exc:  # noqa: B036
            import traceback

            sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
            if outcome.status == "ok":
                outcome.status, outcome.exit_code, outcome.error = "error", 1, "%s: %s" % (type(exc).__name__, exc)

    def _note_leftovers(self):
        """Say which processes outlive the cell: they count against the
        process limit of every later call until they exit."""
        if not self.config.get("pids"):
            return  # not in a sandbox with a process limit
        try:
            note = self._runtime._leftover_note()
        except Exception:
            return
        if note:
            sys.stderr.write(note)

    def _read_channel(self):
        try:
            while True:
                msg = self.channel.recv_message()
                kind = msg.get("type")
                if kind == "exec":
                    self.cells.put(msg)
                elif kind == "interrupt":
                    if msg.get("id") == self.current:
                        # A real signal, not _thread.interrupt_main(): only a
                        # signal wakes a main thread blocked in a system call
                        # (sleep, select, a lock), where most stuck code waits.
                        signal.pthread_kill(self.main_thread, signal.SIGINT)
                elif kind == "ping":
                    self.channel.send_message({"type": "pong", "id": msg["id"]})
                elif kind == "rpc_result":
                    self.rpc.resolve(msg)
        except wire.ChannelClosed:
            pass
        except BaseException as exc:  # the host speaks our protocol; anything else is fatal
            os.write(self.diagnostics, ("codemode runtime: channel error: %r\n" % (exc,)).encode())
        # The host has gone or closed the session: end everything now.
        os._exit(0)


def main(config, preload=(), direct=None):
    session = Session(config, direct)
    session.preload(preload)
    session.serve()
