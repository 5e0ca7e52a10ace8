"""The sandbox's way out: a relay from 127.0.0.1:PORT, in the sandbox's own
network namespace, to codemode's egress proxy behind a Unix socket mounted
into the sandbox. HTTP_PROXY and friends point at it, so ordinary clients
(urllib, requests, pip, curl) reach the allowed hosts with no setup, while a
socket to any other address still finds no route. It runs before user code,
on every backend alike."""

import os
import socket
import threading

_CHUNK = 1 << 16


def start(environ=os.environ):
    """Listen when codemode gave this sandbox a proxy; return the listener."""
    listen, path = environ.get("CODEMODE_EGRESS_LISTEN"), environ.get("CODEMODE_EGRESS_SOCKET")
    if not listen or not path:
        return None
    host, port = listen.rsplit(":", 1)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(64)
    threading.Thread(target=_accept, args=(srv, path), name="codemode-egress", daemon=True).start()
    return srv


def _accept(srv, path):
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(conn, path), name="codemode-egress-conn", daemon=True).start()


def _relay(conn, path):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_pump, args=(up, conn), name="codemode-egress-back", daemon=True)
    back.start()
    _pump(conn, up)
    back.join()
    conn.close()
    up.close()


def _pump(src, dst):
    try:
        while True:
            data = src.recv(_CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
