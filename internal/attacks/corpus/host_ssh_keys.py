# attack: host-ssh-keys
# category: host-data
# expect: blocked: no SSH private key of the host is readable: codemode's ~/.ssh (holding a planted key), /root/.ssh and /home/*/.ssh are absent
# check: secrets
# parallel: yes
import glob
cands = [HOST["markers"]["ssh"], os.path.join(HOST["home"], ".ssh", "id_rsa"), "/root/.ssh/id_ed25519", "/root/.ssh/id_rsa",
         "/root/.ssh/authorized_keys"] + glob.glob("/home/*/.ssh/*") + glob.glob("/root/.ssh/*")
for p in cands:
    text, err = read_text(p)
    if text is None:
        blocked(err)
    elif "PRIVATE KEY" in text or p == HOST["markers"]["ssh"]:
        escaped("read SSH key %s" % p)
    else:
        blocked("%s holds no key" % p)
sock = os.environ.get("SSH_AUTH_SOCK")
if sock:
    escaped("SSH_AUTH_SOCK=%s reached the sandbox" % sock)
done()
