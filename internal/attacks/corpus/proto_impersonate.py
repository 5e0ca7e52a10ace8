# attack: proto-impersonate
# category: protocol
# expect: blocked: reading the runtime's own source (it is in memory) and speaking its protocol directly gives nothing the runtime does not have: file names that would leave the session directory are refused or confined to it, memory keys stay keys, tool names with a path are refused: nothing lands outside the state directory (the host checks its disk)
# check: secrets, statedir
import hashlib
loader = [f for f in sys.meta_path if type(f).__name__ == "_MemoryModules"][0]
src = loader.get_source("_codemode.wire") + loader.get_source("_codemode.main")
print("runtime source read: %d bytes, sha256 %s" % (len(src), hashlib.sha256(src.encode()).hexdigest()[:16]))
sess = find_channel()
import base64
data = base64.b64encode(b"pwned\n").decode()
# The host may refuse these names or confine them to the session's (or the
# client's) own place; which one it did is checked on the host's disk.
for name in ("../../../../../../tmp/codemode-attack-pwned", "/tmp/codemode-attack-pwned-abs", "..\\..\\..\\x",
             "a/../../../b", "out/\0nul", "../" * 40 + "etc/cron.d/pwn"):
    try:
        res = sess.rpc.call("artifact", {"kind": "file", "name": name, "data": data})
    except Exception as e:  # noqa: BLE001
        blocked("artifact name refused")
        continue
    if ".." in str(res.get("uri", "")):
        escaped("host published an artifact at %r" % res.get("uri"))
    else:
        blocked("artifact name confined to the session")
for key in ("../../../tmp/codemode-attack-pwned", "/etc/passwd", "a" * 5000, "x\0y"):
    try:
        sess.rpc.call("memory_save", {"key": key, "value": "pwned"})
        blocked("memory key is a key, not a path")
    except Exception:  # noqa: BLE001
        blocked("memory key refused")
for name in ("../../../tmp/codemode-attack-tool", "os", "__init__", "a/b"):
    try:
        sess.rpc.call("tool_save", {"name": name, "source": "def %s():\n    pass\n" % name.replace("/", "_").replace(".", "_"), "doc": ""})
        if "/" in name:
            escaped("host saved a tool named %r" % name)
        else:
            blocked("tool saved under its own name")
    except Exception:  # noqa: BLE001
        blocked("tool name refused")
for method in ("shell", "read_file", "tools/call", "resources/read"):
    try:
        res = sess.rpc.call(method, {"uri": "file:///etc/shadow", "path": "/etc/shadow"})
        escaped("host answered RPC %s: %r" % (method, res)[:80])
    except Exception:  # noqa: BLE001
        blocked("unknown RPC refused")
done()
