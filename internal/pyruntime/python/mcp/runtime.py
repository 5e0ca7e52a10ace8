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

__all__ = [
    "MCPError", "call_tool", "call_tool_sync", "list_tools", "list_tools_sync", "list_servers",
    "list_servers_sync", "discovered_servers", "describe_server", "list_loaded_server_metadata",
    "query_tool_docs_sync", "query_tool_docs", "search_tool_docs_sync", "search_tool_docs",
    "capability_summary", "ToolResult", "progress", "to_toon",
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

    proxies = {}
    names = {"runtime": sys.modules[__name__], "mcp": mcp_package, "mcp_servers": proxies}
    for b in _briefs:
        proxy = _servers.ServerProxy(b["name"], b["alias"], b.get("description", ""))
        proxies[b["name"]] = proxy
        names["mcp_" + b["alias"]] = proxy
    names["LOADED_MCP_SERVERS"] = ()
    return names


def _rpc(method, **params):
    return _session.rpc.call(method, params)


async def _arpc(method, **params):
    return await _session.rpc.acall(method, params)


def capability_summary():
    """Return the sandbox manual: helpers, limits in force and usage notes."""
    return _session.config.get("manual", "")


def progress(done, total=None, message=""):
    """Report progress of a long call to the client (when it asked for
    progress): progress(3, 10, "fetched page 3")."""
    params = {"progress": float(done), "message": str(message)}
    if total is not None:
        params["total"] = float(total)
    _rpc("progress", **params)


def to_toon(obj):
    """Encode JSON-like data as TOON, a compact text form for tables of
    records (fewer tokens than JSON for uniform lists of dicts)."""
    return _rpc("to_toon", value=obj)


# --- discovery --------------------------------------------------------------

def discovered_servers(detailed=False):
    """Every configured server: a tuple of names, or of {"name", "description"}
    dicts with ``detailed=True``. No server is started."""
    if detailed:
        return tuple({"name": b["name"], "description": b.get("description") or ""} for b in _briefs)
    return tuple(b["name"] for b in _briefs)


async def list_servers():
    """Names of the servers currently loaded (started), sorted."""
    return tuple(await _arpc("list_servers"))


def list_servers_sync():
    """Names of the servers currently loaded (started), sorted."""
    return tuple(_rpc("list_servers"))


def describe_server(name):
    """{"name", "alias", "tools": [{"name", "alias", "description",
    "input_schema"}], "cwd"} for a server, starting it if needed."""
    return _rpc("describe_server", server=_name(name))


def list_loaded_server_metadata():
    """describe_server() of every loaded server."""
    return tuple(_rpc("list_loaded_server_metadata"))


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


async def call_tool(server, tool, arguments=None, *args):
    """Call a tool and return its ToolResult; raise MCPError on any failure,
    including a result with isError."""
    params = {"server": _name(server), "tool": tool, "arguments": arguments or {}}
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
