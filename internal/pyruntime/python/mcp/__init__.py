"""MCP access from sandboxed code.

``mcp.runtime`` holds the discovery and call helpers; ``mcp.servers.<alias>``
modules wrap each configured server's tools. ``runtime`` and ``mcp`` are
predefined in every session, so ``runtime.capability_summary()`` works
without an import.
"""

__all__ = ["runtime", "servers"]
