# attack: host-config
# category: host-data
# expect: blocked: codemode's MCP configuration files are not visible, and the runtime's discovery helpers return names and descriptions only, never env values, headers or tokens (the host scans the output for the planted secrets)
# check: secrets
# timeout: 20
for p in (HOST["config_file"], os.path.join(HOST["home"], ".claude.json"), os.path.join(HOST["home"], ".config/mcp"),
          "/root/.claude.json", "/root/.config/Claude/claude_desktop_config.json"):
    text, err = read_text(p)
    if text is None:
        blocked(err if err != "EISDIR" else "directory")
    else:
        escaped("read the MCP config %s" % p)
print(runtime.discovered_servers(detailed=True))
for name in runtime.discovered_servers():
    try:
        print(runtime.describe_server(name))
    except Exception as e:  # noqa: BLE001
        print("describe_server(%s): %s" % (name, e))
    try:
        print(runtime.query_tool_docs_sync(name, detail="full"))
    except Exception as e:  # noqa: BLE001
        print("query_tool_docs(%s): %s" % (name, e))
blocked("discovery shows no secrets (checked by the host)")
done()
