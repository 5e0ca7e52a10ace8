"""Helpers available to sandboxed code as ``runtime`` (or ``import mcp.runtime``).

Names and return shapes follow the reference project, so prompts written for
it keep working. Beyond it: any configured server can be used without being
listed in ``servers``, search ranks tools of every configured server, every
failure raises ``MCPError``, and tool results offer ``.data`` and ``.text``.
"""

import json as _json

from _codemode.rpc import MCPError

_session = None
_briefs = ()  # ({"name", "alias", "description"}, ...) of every configured server
_proxies = None  # the session's mcp_servers

__all__ = [
    "MCPError", "describe_server_sync", "call_tool", "call_tool_sync", "list_tools", "list_tools_sync", "list_servers",
    "list_servers_sync", "discovered_servers", "describe_server", "list_loaded_server_metadata",
    "query_tool_docs_sync", "query_tool_docs", "search_tool_docs_sync", "search_tool_docs",
    "capability_summary", "ToolResult", "progress", "to_toon", "find_servers", "add_server",
    "save_memory", "load_memory", "list_memories", "update_memory", "delete_memory", "save_tool", "list_saved_tools",
]

from mcp.state import (delete_memory, list_memories, list_saved_tools, load_memory, save_memory,  # noqa: E402
                       save_tool, update_memory)


def _attach(session):
    global _session, _briefs
    _session = session
    _briefs = tuple(session.config.get("servers") or ())


def _user_globals(mcp_package):
    """Names predefined in the user namespace of every session."""
    import sys

    from mcp import servers as _servers

    global _proxies
    proxies = _proxies = _Servers()
    names = {"runtime": sys.modules[__name__], "mcp": mcp_package, "mcp_servers": proxies}
    for b in _briefs:
        proxy = _servers.ServerProxy(b["name"], b["alias"], b.get("description", ""))
        proxies[b["name"]] = proxy
        names["mcp_" + b["alias"]] = proxy
    names["LOADED_MCP_SERVERS"] = ()
    return names


class _Servers(dict):
    """mcp_servers: name -> proxy; an unknown name says which are configured."""

    def __missing__(self, name):
        raise _unknown_server(name)


def _unknown_server(name):
    configured = ", ".join("%s (mcp_%s)" % (b["name"], b["alias"]) for b in _briefs) or "none"
    return MCPError("Unknown MCP server: %s; configured servers: %s" % (name, configured), name, None, "unknown_server")


def _explain(exc):
    """A clearer exception for a cell's uncaught exc, or None to keep it.

    Called by the cell runner only for what reached the top level, so code
    that catches these exceptions itself sees them unchanged.
    """
    import errno

    if isinstance(exc, NameError) and (getattr(exc, "name", None) or "").startswith("mcp_"):
        alias = exc.name[len("mcp_"):]
        if not any(b["alias"] == alias for b in _briefs):
            return _unknown_server(alias)
    if (isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN) or \
            (isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)):
        return _process_limit(exc)
    return None


def _process_limit(exc):
    limit = _session.config.get("pids") if _session is not None else None
    others = _processes() if limit else []  # only a sandbox's /proc is the session's own
    what = "the sandbox's process limit" + (" (%d processes and threads)" % limit if limit else "")
    msg = "%s: %s was reached, so no process or thread could be started." % (exc, what)
    if others:
        msg += " %d other processes are running in this session: %s. End them (os.kill, Popen.wait) or reset the session." % (
            len(others), _describe_processes(others))
    else:
        msg += " Start fewer processes or threads at once (e.g. a smaller pool)."
    return type(exc)(msg) if isinstance(exc, RuntimeError) else OSError(exc.errno, msg)


def _processes():
    """(pid, command) of the sandbox's processes other than the runtime."""
    import os

    own = os.getpid()
    out = []
    try:
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    except OSError:
        return out
    for pid in pids:
        if pid == own or pid == 1:
            continue
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            state, ppid = fields[0].decode(), int(fields[1])
            if ppid == 0:
                # Entered from outside the sandbox's pid namespace (the
                # kubernetes backend's exec'd connector), not started by it.
                continue
            cmd = "(exited, not waited for)" if state == "Z" else _cmdline(pid)
        except (OSError, IndexError, ValueError):
            continue
        out.append((pid, cmd[:60] or "?"))
    return out


def _cmdline(pid):
    """A process's command line. A process that has just exec'd shows an
    empty one for a moment (its arguments are set up after the exec has
    already succeeded for its parent), so an empty one is read again."""
    import time

    for _ in range(20):
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").strip().decode("utf-8", "replace")
        if cmd:
            return cmd
        time.sleep(0.005)
    return cmd


def _describe_processes(procs):
    shown = ", ".join("%d %s" % p for p in procs[:5])
    return shown + (", ..." if len(procs) > 5 else "")


def _leftover_note():
    """A line for stderr about processes still running after a cell, so they
    are not silently counted against the next call's process limit."""
    procs = _processes()
    if not procs:
        return ""
    limit = _session.config.get("pids") if _session is not None else None
    return ("note: %d processes started in this session are still running (%s); they count against the "
            "process limit%s until they exit.\n" % (len(procs), _describe_processes(procs),
                                                   " of %d" % limit if limit else ""))


# --- awaitable results --------------------------------------------------------
#
# Every helper can be awaited: the discovery helpers that answer at once return
# values that are also awaitable (await gives the value itself), so both
# ``runtime.describe_server(x)`` and ``await runtime.describe_server(x)`` work.

def _await_self(self):
    return self
    yield  # noqa: unreachable - makes this a generator, as __await__ must be


class _ReadyDict(dict):
    __await__ = _await_self


class _ReadyList(list):
    __await__ = _await_self


class _ReadyTuple(tuple):
    __await__ = _await_self


class _ReadyStr(str):
    __await__ = _await_self


class _Done:
    """What helpers with nothing to return give: awaitable, falsy, not echoed."""

    _codemode_silent = True
    __await__ = _await_self

    def __bool__(self):
        return False

    def __repr__(self):
        return "None"


_DONE = _Done()


def _ready(value):
    for base, cls in ((dict, _ReadyDict), (list, _ReadyList), (tuple, _ReadyTuple), (str, _ReadyStr)):
        if isinstance(value, base):
            return cls(value)
    return _DONE if value is None else value


class _Pending:
    """A helper's coroutine that says how to fix a missing ``await``.

    It is a coroutine in every way asyncio checks (await, gather,
    create_task); reading a result field from it explains that it was not
    awaited instead of Python's "'coroutine' object has no attribute".
    """

    __slots__ = ("_coro", "_label", "_sync")

    def __init__(self, coro, label, sync):
        self._coro = coro
        self._label = label
        self._sync = sync

    def __await__(self):
        return self._coro.__await__()

    def send(self, value):
        return self._coro.send(value)

    def throw(self, *args):
        return self._coro.throw(*args)

    def close(self):
        return self._coro.close()

    def _hint(self):
        self._coro.close()  # misused: no "never awaited" warning on top of the hint
        return ("%s was not awaited: it returned a coroutine, not its result. Write `result = await %s` "
                "(top-level await works here), or call `%s` from synchronous code" % (self._label, self._label, self._sync))

    def __getattr__(self, name):
        if name.startswith("_") or name.startswith("cr_"):
            return getattr(self._coro, name)
        raise AttributeError("%s (reading .%s)" % (self._hint(), name))

    def __getitem__(self, key):
        raise TypeError("%s (reading [%r])" % (self._hint(), key))

    def __iter__(self):
        raise TypeError("%s (iterating)" % self._hint())

    def __repr__(self):
        return "<pending %s: await it>" % self._label


def _pending(fn):
    """Decorate an async helper so a missing await is explained."""
    import functools

    label = "runtime.%s(...)" % fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return _Pending(fn(*args, **kwargs), label, label.replace("(", "_sync(", 1))
    return call


def _rpc(method, **params):
    return _session.rpc.call(method, params)


async def _arpc(method, **params):
    return await _session.rpc.acall(method, params)


def capability_summary():
    """Return the sandbox manual: helpers, limits in force and usage notes."""
    return _ready(_session.config.get("manual", ""))


def progress(done, total=None, message=""):
    """Report progress of a long call to the client (when it asked for
    progress): progress(3, 10, "fetched page 3")."""
    params = {"progress": float(done), "message": str(message)}
    if total is not None:
        params["total"] = float(total)
    _rpc("progress", **params)
    return _DONE


def to_toon(obj):
    """Encode JSON-like data as TOON, a compact text form for tables of
    records (fewer tokens than JSON for uniform lists of dicts)."""
    return _ready(_rpc("to_toon", value=obj))


# --- discovery --------------------------------------------------------------

def discovered_servers(detailed=False):
    """Every configured server: a tuple of names, or of {"name", "description"}
    dicts with ``detailed=True``. The description is the configured one, else
    what the server says of itself (its instructions or name and version),
    for servers codemode has started before; nothing is started."""
    if detailed:
        return _ready(tuple({"name": b["name"], "description": b.get("description") or ""}
                            for b in _rpc("discovered_servers")))
    return _ready(tuple(b["name"] for b in _briefs))


@_pending
async def list_servers():
    """Names of the servers currently loaded (started), sorted."""
    return tuple(await _arpc("list_servers"))


def list_servers_sync():
    """Names of the servers currently loaded (started), sorted."""
    return tuple(_rpc("list_servers"))


def describe_server(name):
    """{"name", "alias", "tools": [{"name", "alias", "description",
    "input_schema"}], "cwd"} for a server, starting it if needed. Works with
    and without await."""
    return _ready(describe_server_sync(name))


def describe_server_sync(name):
    """Like describe_server, a plain dict."""
    return _rpc("describe_server", server=_name(name))


def list_loaded_server_metadata():
    """describe_server() of every loaded server."""
    return _ready(tuple(_rpc("list_loaded_server_metadata")))


@_pending
async def list_tools(server):
    """The server's tools, listed live (tools/list)."""
    return await _arpc("list_tools", server=_name(server))


def list_tools_sync(server=None):
    """The server's tools from the cache: ({"name", "alias", "description",
    "input_schema"}, ...)."""
    if server is None:
        raise MCPError("list_tools_sync(server) requires a server name")
    return tuple(_rpc("list_tools_cached", server=_name(server)))


def _name(server):
    if not isinstance(server, str):
        raise MCPError("server must be a string naming a configured server, got %r" % (server,))
    return server


def _check_tool(tool):
    if tool is not None and not isinstance(tool, str):
        raise MCPError("'tool' must be a string when provided")


def _detail(detail):
    detail = str(detail).strip().lower()
    return detail if detail in ("summary", "full") else "summary"


@_pending
async def query_tool_docs(server, tool=None, detail="summary"):
    """Docs of a server's tools ({"server", "serverAlias", "tool", "toolAlias",
    "description", "inputSchema" with detail="full"}); a single dict when
    ``tool`` names exactly one tool."""
    _check_tool(tool)
    docs = await _arpc("query_tool_docs", server=_name(server), tool=tool, detail=_detail(detail))
    if tool is not None and len(docs) == 1:
        return docs[0]
    return docs


def query_tool_docs_sync(server, tool=None, detail="summary"):
    """Like query_tool_docs, but always a list."""
    _check_tool(tool)
    return _rpc("query_tool_docs", server=_name(server), tool=tool, detail=_detail(detail))


def _limit(limit):
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise MCPError("'limit' must be an integer")
    return limit


@_pending
async def search_tool_docs(query, *, limit=5, detail="summary"):
    """Rank the tools of every configured server for a query (words, names,
    parameter names; typos tolerated). Returns docs, best first."""
    if not isinstance(query, str) or not query.strip():
        return []
    return await _arpc("search_tool_docs", query=query, limit=_limit(limit), detail=_detail(detail))


def search_tool_docs_sync(query, *, limit=5, detail="summary"):
    """Like search_tool_docs, synchronously."""
    if not isinstance(query, str) or not query.strip():
        return []
    return _rpc("search_tool_docs", query=query, limit=_limit(limit), detail=_detail(detail))


# --- servers from catalogs -------------------------------------------------

@_pending
async def find_servers(query, limit=5):
    """Rank the entries of codemode's server catalogs for a query (names,
    descriptions; typos tolerated): ({"name", "title", "description",
    "version", "registry", "source", "secrets", "configured", "alias"}, ...),
    best first. ``configured`` marks servers already usable."""
    if not isinstance(query, str) or not query.strip():
        return []
    return await _arpc("find_servers", query=query, limit=_limit(limit))


@_pending
async def add_server(name, env=None, persist=False):
    """Add a catalog entry as a server: the policy decides (it may ask the
    user), the server starts and its tools are listed. Returns {"name",
    "alias", "description", "entry"}; ``mcp_<alias>`` and
    ``mcp_servers[name]`` work at once. ``env`` sets the entry's plain
    variables; secret ones come only from codemode's environment.
    ``persist=True`` also keeps it in codemode's config directory (for later
    runs) once the user approves; "config" then names the file."""
    if not isinstance(name, str) or not name.strip():
        raise MCPError("add_server(name) needs the name of a catalog entry (see runtime.find_servers)")
    if env is not None and not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                               for k, v in env.items())):
        raise MCPError("'env' must be a dict of strings")
    added = await _arpc("add_server", name=name, env=env or {}, persist=bool(persist))
    _register(added)
    return added


def _register(added):
    """Make an added server usable in this session as configured ones are."""
    global _briefs
    from mcp import servers as _servers

    brief = {"name": added["name"], "alias": added["alias"], "description": added.get("description") or ""}
    if not any(b["name"] == brief["name"] for b in _briefs):
        _briefs = _briefs + (brief,)
    proxy = _servers.ServerProxy(brief["name"], brief["alias"], brief["description"])
    if _proxies is not None:
        _proxies[brief["name"]] = proxy
    runner = getattr(_session, "runner", None)
    if runner is not None:
        runner.namespace["mcp_" + brief["alias"]] = proxy


# --- calls ------------------------------------------------------------------

class ToolResult(dict):
    """A tool's CallToolResult as a dict ({"content": [...],
    "structuredContent"?, "isError"}), plus conveniences: ``.data`` is the
    structured content, else the text parsed as JSON, else the text;
    ``.text`` is the text content joined."""

    @property
    def text(self):
        return "\n".join(c.get("text", "") for c in self.get("content") or () if c.get("type") == "text")

    @property
    def data(self):
        if self.get("structuredContent") is not None:
            return self["structuredContent"]
        text = self.text
        try:
            return _json.loads(text)
        except ValueError:
            return text

    def __getattr__(self, name):
        # result.field for structured results, as scripts expect.
        data = self.data
        if isinstance(data, dict) and name in data:
            return data[name]
        raise AttributeError(name)


def _result(server, tool, result):
    result = ToolResult(result or {})
    if result.get("isError"):
        err = MCPError("%s.%s failed: %s" % (server, tool, result.text or "the tool reported an error"),
                       server, tool, "tool_error")
        err.result = result
        raise err
    return result


def call_tool(server, tool, arguments=None, *args):
    """Call a tool and return its ToolResult; raise MCPError on any failure,
    including a result with isError."""
    label = "runtime.call_tool(%r, %r, ...)" % (server, tool)
    return _Pending(_call_tool(server, tool, arguments, *args), label, label.replace("(", "_sync(", 1))


async def _call_tool(server, tool, arguments=None, *args):
    params = {"server": server if isinstance(server, str) else _name(server), "tool": tool, "arguments": arguments or {}}
    if args:
        params["positional"] = list(args)
    try:
        result = await _session.rpc.acall("call_tool", params)
    except MCPError as e:
        raise _typed(e) from None
    return _result(server, tool, result)


def call_tool_sync(server, tool, arguments=None, *args):
    """call_tool for synchronous code."""
    params = {"server": _name(server), "tool": tool, "arguments": arguments or {}}
    if args:
        params["positional"] = list(args)
    try:
        result = _session.rpc.call("call_tool", params)
    except MCPError as e:
        raise _typed(e) from None
    return _result(server, tool, result)


def _typed(err):
    # Positional-argument misuse is a TypeError, as for any Python function.
    if err.kind == "type_error":
        return TypeError(str(err))
    return err
