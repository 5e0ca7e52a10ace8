# The attack suite's downstream MCP server (stdio, newline-delimited
# JSON-RPC), run by codemode's client pool ON THE HOST. It has one tool,
# env, which answers the value of the environment variable it is asked for:
# the suite asks for codemode's planted secret variable to check that
# downstream servers never inherit codemode's environment.
import json
import os
import sys

TOOL = {
    "name": "env",
    "description": "Value of one environment variable of this server process.",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}


def reply(msg_id, result=None, error=None):
    out = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue  # notifications need no answer
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        reply(msg_id, {"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "codemode-attack-fixture", "version": "1"}})
    elif method == "tools/list":
        reply(msg_id, {"tools": [TOOL]})
    elif method == "tools/call":
        args = msg.get("params", {}).get("arguments", {})
        value = os.environ.get(str(args.get("message", "")), "")
        reply(msg_id, {"content": [{"type": "text", "text": value}]})
    elif method == "ping":
        reply(msg_id, {})
    else:
        reply(msg_id, error={"code": -32601, "message": "method not found: %s" % method})
