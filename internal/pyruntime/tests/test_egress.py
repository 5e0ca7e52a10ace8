"""The egress relay: bytes both ways between a TCP client on loopback and
the proxy's Unix socket, half-closes passed on, and nothing when the
sandbox has no proxy."""

import os
import socket
import tempfile
import threading
import unittest

import helpers  # noqa: F401  (puts the runtime on sys.path)
from _codemode import egress


class RelayTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "proxy.sock")
        self.upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.upstream.bind(self.path)
        self.upstream.listen(4)
        self.addCleanup(self.upstream.close)

    def serve_upper(self):
        """Answer one connection with what it sent, uppercased, after the
        client's half-close."""

        def run():
            c, _ = self.upstream.accept()
            data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
            c.sendall(data.upper())
            c.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def test_relays_both_ways(self):
        srv = egress.start({"CODEMODE_EGRESS_LISTEN": "127.0.0.1:0", "CODEMODE_EGRESS_SOCKET": self.path})
        self.addCleanup(srv.close)
        t = self.serve_upper()
        c = socket.create_connection(srv.getsockname(), timeout=10)
        payload = b"connect example.com:443 " * 10000
        c.sendall(payload)
        c.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
        c.close()
        t.join(10)
        self.assertEqual(got, payload.upper())

    def test_no_proxy_no_listener(self):
        self.assertIsNone(egress.start({}))

    def test_unreachable_socket_closes_the_client(self):
        srv = egress.start({"CODEMODE_EGRESS_LISTEN": "127.0.0.1:0", "CODEMODE_EGRESS_SOCKET": self.path + ".gone"})
        self.addCleanup(srv.close)
        c = socket.create_connection(srv.getsockname(), timeout=10)
        self.assertEqual(c.recv(10), b"")
        c.close()


if __name__ == "__main__":
    unittest.main()
