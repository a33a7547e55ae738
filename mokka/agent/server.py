"""The probe endpoint: stdlib http.server in a daemon thread."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mokka.agent.health import Health


def parse_addr(addr: str) -> tuple[str, int]:
    """``:9091`` / ``127.0.0.1:0`` / ``[::1]:9091`` -> (host, port)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid --health-addr {addr!r}: use HOST:PORT or :PORT")
    return host.strip("[]"), int(port)


class ProbeServer:
    def __init__(self, addr: str, health: Health):
        host, port = parse_addr(addr)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                code, body = health.probe(self.path.split("?", 1)[0])
                data = (json.dumps(body, sort_keys=True) + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):   # probes every few seconds: not worth a log line
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="probes",
                                        daemon=True)

    def start(self) -> "ProbeServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
