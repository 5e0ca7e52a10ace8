# attack: net-dns
# category: network
# expect: blocked: name resolution reaches no server: no resolver is configured or reachable, raw DNS queries to public resolvers fail with ENETUNREACH, and one aimed at the host's loopback UDP listener stays inside (the host counts)
# check: listener
# parallel: yes
try:
    res = socket.getaddrinfo("example.com", 443, proto=socket.IPPROTO_TCP)
    escaped("resolved example.com to %s" % res[0][4][0])
except socket.gaierror as e:
    blocked("getaddrinfo: %s" % (e.strerror or e))
query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00" + struct.pack(">HH", 1, 1)
servers = []
try:
    with open("/etc/resolv.conf") as f:
        servers = [l.split()[1] for l in f if l.startswith("nameserver")]
except OSError:
    pass
for srv, port in [(s, 53) for s in servers] + [("8.8.8.8", 53), ("127.0.0.53", 53), ("127.0.0.1", HOST["udp_port"])]:
    fam = socket.AF_INET6 if ":" in srv else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(1)
    try:
        s.sendto(query, (srv, port))
        data, _ = s.recvfrom(512)
        escaped("DNS server %s answered %d bytes" % (srv, len(data)))
    except socket.timeout:
        blocked("no DNS answer")
    except OSError as e:
        blocked(ename(e.errno))
    finally:
        s.close()
done()
