# attack: net-external
# category: network
# expect: blocked: no route out: TCP and UDP to the host's own addresses and to the internet fail at once with ENETUNREACH (only lo exists; none at all in gVisor)
# check: listener
# parallel: yes
targets = [(ip, HOST["tcp_port"]) for ip in HOST["host_ips"]] + [(ip, 22) for ip in HOST["host_ips"]]
targets += [("1.1.1.1", 443), ("8.8.8.8", 53), ("2606:4700:4700::1111", 443), ("169.254.169.254", 80)]
for addr in targets:
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr)
        escaped("connected to %s:%d" % addr)
    except socket.timeout:
        escaped("connect to %s:%d timed out: packets left the sandbox" % addr)
    except OSError as e:
        if e.errno == errno.ECONNREFUSED:
            escaped("%s:%d refused the connection: the packet reached a network stack" % addr)
        else:
            blocked(ename(e.errno))
    finally:
        s.close()
for addr in (("8.8.8.8", 53), ("1.1.1.1", 53)) + tuple((ip, HOST["udp_port"]) for ip in HOST["host_ips"]):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"codemode-attack", addr)
        escaped("UDP datagram to %s:%d was sent" % addr)
    except OSError as e:
        blocked(ename(e.errno))
    finally:
        s.close()
done()
