// Package egress lets sandboxed code reach the hosts an operator allows, and
// nothing else, through codemode's own HTTP(S) proxy.
//
// A sandbox has no route anywhere. Each one gets a Link: a Unix socket in a
// directory mounted into the sandbox, which tells the proxy which session a
// request comes from. The Python runtime relays 127.0.0.1:3128 inside the
// sandbox's own network namespace to that socket, and the sandbox's
// environment points HTTP_PROXY, HTTPS_PROXY and ALL_PROXY there, so
// ordinary clients work unchanged while raw sockets still find no route.
//
// Every request is checked against the allow-list (List: host, host:port,
// *.example.com, IP and CIDR entries; a port-less entry means 80 and 443),
// then by a Governor (the policy gate: server "net", tool = host), then
// against the session's limits. Names are resolved here, on the host, and
// the connection goes to the address that was checked; loopback, private,
// link-local and other non-public addresses are reached only when an IP or
// CIDR entry names them, so no allowed name can lead inside.
//
// Secrets are placeholders in the sandbox's environment. For a host with a
// bound secret the proxy terminates TLS with a per-instance CA (its key only
// in this process's memory; sandboxes get the certificate in a trust
// bundle), swaps placeholders in headers and query, verifies the upstream
// server and re-encrypts; its answers come back with the value turned into
// the placeholder again. Other HTTPS is tunnelled untouched.
package egress
