"""Shared helpers: import the runtime from the source tree and drive a real
booted interpreter the way the host does."""

import json
import os
import struct
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON_DIR = os.path.join(ROOT, "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)


def load_bundle():
    """The runtime's modules as the host's boot frame carries them."""
    modules, packages = {}, []
    for dirpath, _, files in os.walk(PYTHON_DIR):
        if "__pycache__" in dirpath:
            continue
        for f in files:
            if not f.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), PYTHON_DIR)[:-3].replace(os.sep, "/")
            name = rel.replace("/", ".")
            if rel.endswith("/__init__"):
                name = rel[: -len("/__init__")].replace("/", ".")
                packages.append(name)
            with open(os.path.join(dirpath, f)) as fh:
                modules[name] = fh.read()
    return modules, packages


def frame(kind, payload):
    return struct.pack(">BI", ord(kind), len(payload)) + payload


class Booted:
    """A runtime started with the real bootstrap over pipes."""

    def __init__(self, config=None, preload=None, pythonpath=None, direct=False):
        with open(os.path.join(ROOT, "bootstrap.py")) as f:
            bootstrap = f.read()
        # -I ignores PYTHONPATH: a test that needs its own modules drops it.
        args, env = [sys.executable, "-I", "-B", "-c", bootstrap], None
        if pythonpath:
            args, env = [sys.executable, "-B", "-c", bootstrap], dict(os.environ, PYTHONPATH=pythonpath)
        modules, packages = load_bundle()
        boot = {"type": "boot", "modules": modules, "packages": packages,
                "entry": "_codemode.main", "config": config or {"manual": "MANUAL"}}
        # direct: the direct pipes of the native sandbox (sandbox.Direct),
        # whose requests a thread of ours reads and hands to on_message.
        self.requests = self.replies = None
        self.direct = 0  # requests that came on the direct pipe
        self._on_message = None
        fds = ()
        if direct:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            self.requests, self.replies = os.fdopen(req_r, "rb"), os.fdopen(rep_w, "wb")
            fds = (req_w, rep_r)
            boot["direct"] = {"requests": req_w, "replies": rep_r}
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=fds)
        for fd in fds:
            os.close(fd)
        self._direct_reader = None
        if direct:
            self._direct_reader = threading.Thread(target=self._read_direct, daemon=True)
            self._direct_reader.start()
        if preload:
            boot["preload"] = preload
        self.send(boot)
        self.next_id = 0
        self.ready = self.read_message()

    def send(self, msg):
        self.proc.stdin.write(frame("M", json.dumps(msg).encode()))
        self.proc.stdin.flush()

    def answer(self, request, result):
        """Send an RPC's result where the host would: on the direct reply
        pipe for a request that came on the direct pipe."""
        if not request.get("_direct"):
            self.send(result)
            return
        self.replies.write(frame("M", json.dumps(result).encode()))
        self.replies.flush()

    def _read_direct(self):
        while True:
            head = self.requests.read(5)
            if len(head) < 5:
                return
            kind, size = struct.unpack(">BI", head)
            msg = json.loads(self.requests.read(size))
            assert kind == ord("M") and msg["type"] == "rpc", (kind, msg)
            msg["_direct"] = True
            self.direct += 1
            if self._on_message:
                self._on_message(self, msg)

    def read_frame(self):
        head = self.proc.stdout.read(5)
        if len(head) < 5:
            raise EOFError("runtime closed its channel; stderr: %r" % self.proc.stderr.read())
        kind, size = struct.unpack(">BI", head)
        return chr(kind), self.proc.stdout.read(size)

    def read_message(self):
        kind, payload = self.read_frame()
        assert kind == "M", (kind, payload)
        return json.loads(payload)

    def run(self, code, on_message=None):
        """Run a cell; return (done message, stdout bytes, stderr bytes)."""
        self.next_id += 1
        self._on_message = on_message
        self.send({"type": "exec", "id": self.next_id, "code": code, "filename": "<cell-%d>" % self.next_id})
        out, err = b"", b""
        while True:
            kind, payload = self.read_frame()
            if kind == "O":
                out += payload
            elif kind == "E":
                err += payload
            else:
                msg = json.loads(payload)
                if msg["type"] == "done":
                    return msg, out, err
                if on_message:
                    on_message(self, msg)

    def close(self):
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
            self.proc.stdout.close()
            self.proc.stderr.close()
        if self._direct_reader:
            # The runtime's end is closed now: the reader sees EOF. Closing
            # the file under a thread that reads it would wait for it.
            self._direct_reader.join(timeout=10)
            self._direct_reader = None
            self.replies.close()
            self.requests.close()

    def stop_and_read_stderr(self):
        """End the runtime and return what it wrote to its own stderr (the host's log)."""
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        data = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return data
