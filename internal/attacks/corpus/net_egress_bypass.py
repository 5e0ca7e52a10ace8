# attack: net-egress-bypass
# category: network
# expect: blocked: the egress proxy refuses every target off its allow-list however it is spelled (a name allowed but resolving to loopback, as DNS rebinding would; decimal, octal, hex and short forms of 127.0.0.1; IPv6 and IPv4-mapped loopback; the metadata address; credentials in the URL; CONNECT to a port not listed) with a 403, and the host's listeners see nothing
# check: listener
# parallel: yes
E = HOST["egress"]
if not E:
    blocked("no egress: codemode refuses to run the egress proxy on this backend")
else:
    port = HOST["tcp_port"]
    gets = ["http://localhost:%d/" % port, "http://2130706433:%d/" % port, "http://0177.0.0.1:%d/" % port,
            "http://0x7f.0.0.1:%d/" % port, "http://127.1:%d/" % port, "http://[::1]:%d/" % port,
            "http://[::ffff:127.0.0.1]:%d/" % port, "http://[::ffff:7f00:1]:%d/" % port,
            "http://[0:0:0:0:0:0:0:1]:%d/" % port, "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/latest/meta-data/", "http://127.0.0.1:%d@127.0.0.1:%d/" % (E["port"], port),
            "http://127.0.0.1:%d#@127.0.0.1:%d/" % (port, E["port"]), "http://LOCALHOST.:%d/" % port]
    connects = ["127.0.0.1:%d" % port, "localhost:%d" % port, "[::1]:%d" % port, "127.0.0.1:22",
                "127.0.0.1:%d" % (E["port"] + 1), "2130706433:%d" % port]
    for url in gets:
        status, body = proxy_exchange(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % url).encode())
        if 200 <= status < 300:
            escaped("GET %s went through: %r" % (url, body[:80]))
        else:
            blocked("HTTP %d" % status)
    for target in connects:
        status, _ = proxy_exchange(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        if 200 <= status < 300:
            escaped("CONNECT %s was opened" % target)
        else:
            blocked("CONNECT %d" % status)
done()
