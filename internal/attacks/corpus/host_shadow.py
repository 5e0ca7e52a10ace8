# attack: host-shadow
# category: host-data
# expect: blocked: the host's /etc is not there: the native sandbox has a generated minimal /etc, containers have the image's; shadow files are absent or unreadable to uid 65534
# check: secrets
# parallel: yes
for path in ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/security/opasswd", "/etc/ssh/ssh_host_ed25519_key",
             "/etc/ssh/ssh_host_rsa_key", "/etc/machine-id", "/var/lib/dbus/machine-id"):
    text, err = read_text(path)
    if text is None:
        blocked(err)
    elif "shadow" in path and "$" in text:
        escaped("read password hashes from %s" % path)
    elif "PRIVATE KEY" in text:
        escaped("read host key %s" % path)
    elif "machine-id" in path and text.strip() and text.strip() == HOST.get("machine_id"):
        escaped("read the host's machine id from %s" % path)
    else:
        blocked("%s holds nothing of the host's" % path)
done()
