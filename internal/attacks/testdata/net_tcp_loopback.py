# attack: net-tcp-loopback
# category: network
# expect: blocked: the sandbox's 127.0.0.1 and ::1 are its own network namespace's loopback, so the host's loopback listener never sees a connection (the host counts them)
# check: listener
# parallel: yes
port = HOST["tcp_port"]
for addr in (("127.0.0.1", port), ("::1", port), ("localhost", port), ("127.0.0.2", port)):
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr)
        escaped("connected to %s:%d" % addr)
    except socket.timeout:
        escaped("connect to %s:%d timed out (packets went somewhere)" % addr)
    except OSError as e:
        if e.errno == errno.ECONNREFUSED:
            blocked("ECONNREFUSED from the sandbox's own loopback")
        else:
            blocked(ename(e.errno) + (" (no interface)" if e.errno in (errno.ENETUNREACH, errno.EADDRNOTAVAIL) else ""))
    finally:
        s.close()
done()
