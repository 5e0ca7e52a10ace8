"""Proxies and modules for the configured MCP servers.

``mcp_<alias>`` and ``mcp_servers[name]`` are ServerProxy objects: any
attribute is an async function calling the tool of that name or alias.
``import mcp.servers.<alias>`` builds a module with one async function per
tool, ``TOOLS`` and ``TOOL_MAP`` (the server is started on import).
"""

import sys
from importlib.machinery import ModuleSpec

from mcp import runtime

__all__ = []


class ToolFunction:
    """One tool of a server, callable with keyword arguments (or one
    positional argument when the tool has a single required parameter)."""

    def __init__(self, server, tool, doc=None, label=None):
        self._server = server
        self._tool = tool
        self._label = label or tool  # how code names it, for messages
        self._hints = ("%s(...)" % self._label, "%s.sync(...)" % self._label)
        self.__name__ = tool
        self.__doc__ = doc

    def __call__(self, *args, **kwargs):
        return runtime._Pending(runtime._call_tool(self._server, self._tool, kwargs, *args), *self._hints)

    def sync(self, *args, **kwargs):
        """Call the tool from synchronous code."""
        return runtime.call_tool_sync(self._server, self._tool, kwargs, *args)

    def __repr__(self):
        return "<tool %s.%s>" % (self._server, self._tool)


class ServerProxy:
    def __init__(self, name, alias, description=""):
        self._name = name
        self._alias = alias
        self.__doc__ = description or ("MCP server %r" % name)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        fn = ToolFunction(self._name, attr, label="mcp_%s.%s" % (self._alias, attr))
        self.__dict__[attr] = fn  # the next use skips __getattr__
        return fn

    async def list_tools(self):
        return await runtime.list_tools(self._name)

    def __dir__(self):
        try:
            return sorted(t["alias"] for t in runtime.list_tools_sync(self._name))
        except Exception:
            return []

    def __repr__(self):
        return "<MCP server %s (mcp_%s)>" % (self._name, self._alias)


class _ServerModules:
    """Meta-path finder that builds mcp.servers.<alias> on import."""

    PREFIX = __name__ + "."

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(self.PREFIX) or "." in name[len(self.PREFIX):]:
            return None
        alias = name[len(self.PREFIX):]
        if not any(b["alias"] == alias for b in runtime._briefs):
            return None
        return ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        alias = module.__name__[len(self.PREFIX):]
        meta = runtime.describe_server_sync(alias)
        module.__doc__ = "MCP server '%s' wrappers" % meta["name"]
        module.TOOLS = meta["tools"]
        module.TOOL_MAP = {t["alias"]: t["name"] for t in meta["tools"]}
        module.__all__ = sorted(module.TOOL_MAP)
        for t in meta["tools"]:
            setattr(module, t["alias"], ToolFunction(meta["name"], t["name"], t.get("description"), t["alias"]))


sys.meta_path.append(_ServerModules())


def __getattr__(alias):
    # mcp.servers.<alias> without an explicit import.
    import importlib

    try:
        return importlib.import_module(__name__ + "." + alias)
    except ImportError:
        raise AttributeError(alias) from None


def __dir__():
    return sorted(b["alias"] for b in runtime._briefs)
