# attack: net-egress-smuggle
# category: network
# expect: blocked: through the egress proxy an allowed host sees only its own name in Host whatever the sandbox wrote, never a Proxy-Authorization, and a secret's placeholder unchanged unless the host is the secret's; an intercepted tunnel refuses a Host other than its own; a request smuggled in a body does not reach the host's listeners
# check: listener, secrets
# parallel: yes
import json
E = HOST["egress"]
if not E:
    blocked("no egress: codemode refuses to run the egress proxy on this backend")
else:
    echo = "127.0.0.1:%d" % E["port"]
    other = "127.0.0.1:%d" % HOST["tcp_port"]
    placeholder = os.environ.get(E["secret_env"], "")
    if not placeholder.startswith("codemode-secret-"):
        escaped("the secret variable is not a placeholder")
    tries = [
        ("Host header", "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (echo, other)),
        ("Host of the secret's host", "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (echo, E["secret_host"], placeholder)),
        ("Proxy-Authorization", "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\nConnection: close\r\n\r\n" % (echo, echo, placeholder)),
        ("Proxy-Authorization named in Connection", "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive, Proxy-Authorization\r\nProxy-Authorization: x\r\n\r\n" % (echo, echo)),
        ("CL.TE smuggling", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 60\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (echo, echo, other, other)),
    ]
    for name, raw in tries:
        status, body = proxy_exchange(raw.encode())
        if status != 200:
            blocked("%s: HTTP %d" % (name, status))
            continue
        try:
            text = body.decode(errors="replace")
            seen = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]  # the first answer's
        except (ValueError, IndexError):
            blocked("%s: not the echo's answer" % name)
            continue
        if seen["host"] != echo:
            escaped("%s: the host saw Host %r" % (name, seen["host"]))
        elif seen["proxy_authorization"]:
            escaped("%s: Proxy-Authorization was forwarded" % name)
        elif seen["authorization"] not in ("", "Bearer " + placeholder):
            escaped("%s: the placeholder was swapped for a host that is not the secret's" % name)
        else:
            blocked("%s: stripped or kept to the checked host" % name)
    status, _ = proxy_exchange(("GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (echo, placeholder)).encode(),
                               tls_host=E["secret_host"] + ":443")
    if 200 <= status < 300:
        escaped("an intercepted tunnel to %s served a request for %s" % (E["secret_host"], echo))
    else:
        blocked("intercepted tunnel with another Host: HTTP %d" % status)
done()
