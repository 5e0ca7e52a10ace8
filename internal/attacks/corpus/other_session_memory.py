# attack: other-session-memory
# category: host-data
# expect: blocked: memory and saved tools are kept per client (principal) by the host; the sandbox cannot name another client's, even with forged RPC parameters
# check: secrets
# needs: victim
# parallel: yes
key = HOST["victim_key"]
if load_memory(key) is not None:
    escaped("loaded another client's memory %s" % key)
else:
    blocked("another client's memory key is absent here")
if key in list_memories():
    escaped("another client's memory key is listed")
sess = find_channel()
for extra in ({"principal": "victim"}, {"ns": "victim"}, {"owner": "victim"}, {"key": "../victim/" + key},
              {"key": "../../memory/victim.json"}):
    params = {"key": key}
    params.update(extra)
    try:
        res = sess.rpc.call("memory_load", params)
    except Exception as e:  # noqa: BLE001
        blocked("forged memory_load refused (%s)" % type(e).__name__)
        continue
    if res and res.get("found"):
        escaped("forged memory_load %r found a value" % extra)
    else:
        blocked("forged parameters ignored")
from mcp import state
if any(t in state.list_saved_tools() for t in ("victim_tool",)):
    escaped("another client's saved tool is listed")
done()
