# attack: net-external
# category: network
# expect: blocked: no route out: TCP and UDP to the host's own addresses and to the internet fail at once with ENETUNREACH (only lo exists; none at all in gVisor); a Kubernetes Pod has its own interface, and its deny-all NetworkPolicy stops every connection at the node (refused or dropped: the host's listeners see nothing)
# check: listener
# parallel: yes
targets = [(ip, HOST["tcp_port"]) for ip in HOST["host_ips"]] + [(ip, 22) for ip in HOST["host_ips"]]
targets += [("1.1.1.1", 443), ("8.8.8.8", 53), ("2606:4700:4700::1111", 443), ("169.254.169.254", 80)]
pod = HOST["pod_network"]
for addr in targets:
    res = tcp_connect(addr)
    if res == "connected":
        escaped("connected to %s:%d" % addr)
    elif pod and res in ("timeout", errno.ECONNREFUSED):
        blocked("NetworkPolicy: %s" % (res if res == "timeout" else ename(res)))
    elif res == "timeout":
        escaped("connect to %s:%d timed out: packets left the sandbox" % addr)
    elif res == errno.ECONNREFUSED:
        escaped("%s:%d refused the connection: the packet reached a network stack" % addr)
    else:
        blocked(ename(res))
for addr in (("8.8.8.8", 53), ("1.1.1.1", 53)) + tuple((ip, HOST["udp_port"]) for ip in HOST["host_ips"]):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"codemode-attack", addr)
        if pod:
            blocked("UDP sent into the Pod network, dropped by its NetworkPolicy (the host's listeners judge)")
        else:
            escaped("UDP datagram to %s:%d was sent" % addr)
    except OSError as e:
        blocked(ename(e.errno))
    finally:
        s.close()
done()
