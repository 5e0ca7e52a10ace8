# attack: host-state-dir
# category: host-data
# expect: blocked: codemode's state directory (memory, saved tools, session files, a planted marker) is not visible; the sandbox reaches memory only through the host, for its own client
# check: secrets
# parallel: yes
sd = HOST["state_dir"]
for p in (HOST["markers"]["state"], sd, os.path.join(sd, "sessions"), os.path.join(sd, "memory"),
          os.path.join(HOST["home"], ".local/state/codemode"), "/var/lib/codemode", "/root/.local/state/codemode"):
    try:
        if os.path.isdir(p):
            escaped("state directory %s is visible (%d entries)" % (p, len(os.listdir(p))))
        else:
            text, err = read_text(p)
            if text is None:
                blocked(err)
            else:
                escaped("read %s" % p)
    except OSError as e:
        blocked(ename(e.errno))
man = runtime.capability_summary()
if sd in man:
    escaped("the manual names the host state directory")
else:
    blocked("the manual does not name host paths")
done()
