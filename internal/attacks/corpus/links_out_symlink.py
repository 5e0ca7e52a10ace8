# attack: links-out-symlink
# category: links
# expect: blocked: files under /workspace/out are read by the runtime inside the sandbox, so a symlink there to a host path (codemode's home, state dir, SSH key) resolves in the sandbox's filesystem and finds nothing; the host stores bytes, never follows a path (the host scans stored files for the planted secrets)
# check: secrets
os.makedirs("/workspace/out", exist_ok=True)
links = {"home-marker": HOST["markers"]["home"], "ssh-key": HOST["markers"]["ssh"], "state-marker": HOST["markers"]["state"],
         "pid1-root-passwd": "/proc/1/root/etc/passwd", "config": HOST["config_file"], "parent": "../../../../../../"}
for name, target in links.items():
    try:
        os.symlink(target, "/workspace/out/" + name)
    except OSError as e:
        blocked("symlink " + ename(e.errno))
for name in links:
    try:
        publish("/workspace/out/" + name, name="link-" + name)
        if name not in ("pid1-root-passwd",):
            escaped("published the target of %s" % name)
    except Exception as e:  # noqa: BLE001
        blocked("%s: %s" % (type(e).__name__, getattr(e, "strerror", None) or e))
for name in links:
    os.unlink("/workspace/out/" + name)
blocked("links resolve inside the sandbox")
done()
