# attack: net-netlink
# category: network
# expect: blocked: rtnetlink shows only the sandbox's own interfaces (lo, or none in gVisor; lo and the Pod's own interface in Kubernetes, whose traffic its NetworkPolicy drops), and creating a link is refused (EPERM: no CAP_NET_ADMIN); audit netlink is refused
# parallel: yes
NETLINK_ROUTE, NETLINK_AUDIT = 0, 9
RTM_NEWLINK, RTM_GETLINK = 16, 18
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP, NLM_F_CREATE, NLM_F_EXCL = 1, 4, 0x300, 0x400, 0x200
NLMSG_ERROR, NLMSG_DONE = 2, 3
IFLA_IFNAME, IFLA_LINKINFO, IFLA_INFO_KIND = 3, 18, 1


def attr(typ, data):
    a = struct.pack("<HH", 4 + len(data), typ) + data
    return a + b"\0" * ((4 - len(a) % 4) % 4)


try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    s.settimeout(2)
    body = struct.pack("<BxHiII", 0, 0, 0, 0, 0)
    s.send(struct.pack("<IHHII", 16 + len(body), RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
    names, finished = [], False
    while not finished:
        data = s.recv(65536)
        off = 0
        while off + 16 <= len(data):
            ln, typ, _, _, _ = struct.unpack_from("<IHHII", data, off)
            if typ == NLMSG_DONE or typ == NLMSG_ERROR:
                finished = True
                break
            a = off + 16 + 16
            while a + 4 <= off + ln:
                alen, atyp = struct.unpack_from("<HH", data, a)
                if alen < 4:
                    break
                if atyp == IFLA_IFNAME:
                    names.append(data[a + 4:a + alen].split(b"\0")[0].decode())
                a += (alen + 3) & ~3
            off += (ln + 3) & ~3
    foreign = [n for n in names if n != "lo"]
    if HOST["pod_network"] and len(foreign) == 1:
        blocked("rtnetlink sees lo and the Pod's own %s" % foreign[0])
    elif foreign:
        escaped("rtnetlink shows interfaces %s" % ",".join(foreign))
    else:
        blocked("rtnetlink sees %s" % ("only lo" if names else "no interface"))
    info = attr(IFLA_INFO_KIND, b"dummy\0")
    body = struct.pack("<BxHiII", 0, 0, 0, 0, 0) + attr(IFLA_IFNAME, b"cmattack0\0") + attr(IFLA_LINKINFO, info)
    s.send(struct.pack("<IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 2, 0) + body)
    data = s.recv(65536)
    ln, typ = struct.unpack_from("<IH", data, 0)
    if typ == NLMSG_ERROR:
        err = -struct.unpack_from("<i", data, 16)[0]
        if err == 0:
            escaped("created network interface cmattack0")
        else:
            blocked("RTM_NEWLINK " + ename(err))
    s.close()
except OSError as e:
    blocked("rtnetlink " + ename(e.errno))
try:
    a = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    a.settimeout(1)
    # AUDIT_GET
    a.send(struct.pack("<IHHII", 16, 1000, NLM_F_REQUEST | NLM_F_ACK, 1, 0))
    data = a.recv(8192)
    typ = struct.unpack_from("<H", data, 4)[0]
    err = -struct.unpack_from("<i", data, 16)[0] if typ == NLMSG_ERROR else 0
    if typ == NLMSG_ERROR and err != 0:
        blocked("audit " + ename(err))
    else:
        escaped("the audit subsystem answered")
    a.close()
except OSError as e:
    blocked("audit " + ename(e.errno))
except socket.timeout:
    blocked("audit: no answer")
done()
