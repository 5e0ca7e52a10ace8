# attack: host-env
# category: host-data
# expect: blocked: the sandbox's environment is a fixed minimal one (PATH, HOME, TMPDIR, LANG, MPLBACKEND, and with egress the proxy's variables and secrets' placeholders); none of codemode's variables (a planted secret, DOCKER_HOST, the real HOME) is in it or in any /proc/*/environ
# check: secrets
# parallel: yes
allowed = {"PATH", "HOME", "TMPDIR", "LANG", "MPLBACKEND", "HOSTNAME", "container", "TERM", "LC_CTYPE", "PWD", "SHLVL", "_"}
if HOST["egress"]:
    # The proxy's settings and the egress secret's placeholder; the secrets
    # check fails the attack if any value were a real secret.
    allowed |= {"CODEMODE_EGRESS_SOCKET", "CODEMODE_EGRESS_LISTEN", "NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy",
                "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", HOST["egress"]["secret_env"],
                HOST["egress"]["echo_secret_env"]}
extra = sorted(set(os.environ) - allowed)
if HOST["env_secret_name"] in os.environ:
    escaped("codemode's secret variable is in the environment")
if extra:
    escaped("unexpected variables %s" % ",".join(extra))
else:
    blocked("minimal environment: %s" % ",".join(sorted(os.environ)))
if os.environ.get("HOME") == HOST["home"]:
    escaped("HOME is codemode's home")
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    text, err = read_text("/proc/%s/environ" % pid)
    if text and HOST["env_secret_name"] in text:
        escaped("secret variable in /proc/%s/environ" % pid)
done()
