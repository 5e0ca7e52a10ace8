"""codemode's in-sandbox runtime (private; user code should use ``mcp.runtime``)."""
