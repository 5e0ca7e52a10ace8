# attack: net-tcp-loopback
# category: network
# expect: blocked: the sandbox's 127.0.0.1 and ::1 are its own network namespace's loopback, so the host's loopback listener never sees a connection (the host counts them)
# check: listener
# parallel: yes
port = HOST["tcp_port"]
for addr in (("127.0.0.1", port), ("::1", port), ("localhost", port), ("127.0.0.2", port)):
    res = tcp_connect(addr)
    if res == "connected":
        escaped("connected to %s:%d" % addr)
    elif res == "timeout":
        escaped("connect to %s:%d timed out (packets went somewhere)" % addr)
    elif res == errno.ECONNREFUSED:
        blocked("ECONNREFUSED from the sandbox's own loopback")
    else:
        blocked(ename(res) + (" (no interface)" if res in (errno.ENETUNREACH, errno.EADDRNOTAVAIL) else ""))
done()
