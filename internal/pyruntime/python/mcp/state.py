"""Memory and saved tools, kept by the host in codemode's state directory.

The sandbox never sees that directory: every read and write goes through
the host, and saved tools run only where code imports them (``from
user_tools import name``), never automatically.
"""

import inspect
import json
import sys
import types
from importlib.machinery import ModuleSpec

from _codemode.rpc import MCPError

_rpc = None


def _attach(rpc):
    global _rpc
    _rpc = rpc


def _check_key(key):
    if not isinstance(key, str) or not key:
        raise MCPError("memory keys are non-empty strings")
    return key


def save_memory(key, value):
    """Store a JSON value under key; it survives sessions and restarts."""
    json.dumps(value)  # fail here, with Python's message, on what JSON cannot hold
    _rpc.call("memory_save", {"key": _check_key(key), "value": value})


def load_memory(key, default=None):
    """The value stored under key, or default."""
    res = _rpc.call("memory_load", {"key": _check_key(key)})
    return res["value"] if res.get("found") else default


def list_memories():
    """The stored keys, sorted."""
    return _rpc.call("memory_list", {})


def delete_memory(key):
    """Remove key; returns whether it existed."""
    return _rpc.call("memory_delete", {"key": _check_key(key)})


def update_memory(key, fn, default=None):
    """Replace the value under key with fn(old) (old is default when absent),
    atomically: if another session changed it meanwhile, fn runs again on
    the new value. Returns the new value."""
    key = _check_key(key)
    for _ in range(100):
        res = _rpc.call("memory_load", {"key": key})
        old = res["value"] if res.get("found") else default
        new = fn(old)
        json.dumps(new)
        ok = _rpc.call("memory_save", {"key": key, "value": new, "version": res.get("version", 0)})
        if ok.get("saved"):
            return new
    raise MCPError("update_memory(%r): too many concurrent updates" % key)


def save_tool(func, name=None):
    """Save a function (its source) so every later session can import it:
    ``from user_tools import <name>``."""
    if not callable(func) or not hasattr(func, "__code__"):
        raise ValueError("save_tool() takes a function defined in Python code")
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError) as e:
        raise ValueError("save_tool(%s): its source is not available (%s)" % (getattr(func, "__name__", func), e))
    name = name or func.__name__
    _rpc.call("tool_save", {"name": name, "source": _dedent(source), "doc": inspect.getdoc(func) or ""})
    _invalidate()
    return "Tool '%s' saved. It will be available in future sessions: from user_tools import %s" % (name, name)


def list_saved_tools():
    """{name: doc} of the saved tools."""
    return {t["name"]: t.get("doc", "") for t in _rpc.call("tool_list", {})}


def _dedent(source):
    import textwrap

    return textwrap.dedent(source)


def _invalidate():
    sys.modules.pop("user_tools", None)


class _UserTools:
    """Builds the ``user_tools`` module from the host's saved tools on import."""

    def find_spec(self, name, path=None, target=None):
        if name != "user_tools" or _rpc is None:
            return None
        return ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__doc__ = "Functions saved with save_tool() in earlier sessions."
        names = []
        for t in _rpc.call("tool_list", {"sources": True}):
            filename = "<saved tool %s>" % t["name"]
            import linecache

            linecache.cache[filename] = (len(t["source"]), None, t["source"].splitlines(True), filename)
            try:
                exec(compile(t["source"], filename, "exec"), module.__dict__)
                names.append(t["name"])
            except Exception as e:  # one broken tool must not hide the others
                print("user_tools: %s could not be loaded: %s: %s" % (t["name"], type(e).__name__, e), file=sys.stderr)
        module.__all__ = names


sys.meta_path.append(_UserTools())
