# attack: net-udp-loopback
# category: network
# expect: blocked: datagrams to 127.0.0.1/::1 stay on the sandbox's own loopback; the host's UDP listener receives nothing (the host counts them)
# check: listener
# parallel: yes
port = HOST["udp_port"]
sent = 0
for addr in (("127.0.0.1", port), ("::1", port)):
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        for _ in range(20):
            s.sendto(b"codemode-attack", addr)
            sent += 1
    except OSError as e:
        blocked(ename(e.errno) + (" (no interface)" if e.errno in (errno.ENETUNREACH, errno.EADDRNOTAVAIL) else ""))
    finally:
        s.close()
if sent:
    blocked("%d datagrams sent into the sandbox's own loopback" % sent)
done()
