# attack: net-raw-packet
# category: network
# expect: blocked: raw IP and AF_PACKET sockets need CAP_NET_RAW, which is dropped (EPERM)
# parallel: yes
for fam, typ, proto, label in ((socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP, "raw ICMP"),
                               (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW, "raw IP"),
                               (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6, "raw ICMPv6"),
                               (socket.AF_PACKET, socket.SOCK_RAW, 0x0300, "AF_PACKET")):
    try:
        s = socket.socket(fam, typ, socket.htons(proto) if fam == socket.AF_PACKET else proto)
    except OSError as e:
        blocked(ename(e.errno))
        continue
    s.close()
    escaped("created a %s socket" % label)
done()
