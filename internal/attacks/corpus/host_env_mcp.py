# attack: host-env-mcp
# category: host-data
# expect: blocked: downstream MCP servers get a minimal environment plus their configured env, never codemode's own variables; a tool that echoes its environment cannot hand them to the sandbox
# check: secrets
# needs: upstream
# timeout: 20
srv = HOST["upstream"]
res = runtime.call_tool_sync(srv, "env", {"message": HOST["env_secret_name"]})
if res.text.strip():
    escaped("the downstream server hands out codemode's secret variable")
else:
    blocked("codemode's variables are not passed to downstream servers")
res = runtime.call_tool_sync(srv, "env", {"message": "PATH"})
if not res.text.strip():
    escaped("sanity: the env tool returned no PATH, the test is broken")
done()
