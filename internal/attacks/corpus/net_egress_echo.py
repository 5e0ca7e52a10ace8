# attack: net-egress-echo
# category: network
# expect: blocked: a host with a secret bound to it that echoes what it receives (in a header, in the body, gzip-compressed) answers the sandbox with the placeholder only: the proxy turns the real value back into the placeholder before the answer reaches the sandbox
# check: secrets
# parallel: yes
import gzip, json
E = HOST["egress"]
if not E:
    blocked("no egress: codemode refuses to run the egress proxy on this backend")
else:
    echo = "127.0.0.1:%d" % E["port"]
    placeholder = os.environ.get(E["echo_secret_env"], "")
    if not placeholder.startswith("codemode-secret-"):
        escaped("the echo secret's variable is not a placeholder")
    tries = [
        ("header", "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (echo, echo, placeholder)),
        ("query", "GET http://%s/?key=%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (echo, placeholder, echo)),
        ("gzip", "GET http://%s/?key=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n" % (echo, placeholder, echo, placeholder)),
    ]
    for name, raw in tries:
        status, body = proxy_exchange(raw.encode())
        if status != 200:
            blocked("%s: HTTP %d" % (name, status))
            continue
        if body.startswith(b"\x1f\x8b"):
            body = gzip.decompress(body)
        text = body.decode(errors="replace")
        try:
            seen = json.JSONDecoder().raw_decode(text[text.index("{"):])[0]
        except (ValueError, IndexError):
            blocked("%s: not the echo's answer" % name)
            continue
        # The secrets check fails the attack if the real value is anywhere
        # in the output; here, the echo must show the placeholder itself.
        shown = seen["authorization"] if name != "query" else seen["path"]
        if placeholder not in shown:
            escaped("%s: the echo showed something other than the placeholder" % name)
        else:
            blocked("%s: echoed as the placeholder" % name)
done()
