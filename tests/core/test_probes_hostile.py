"""The probe endpoint as a network peer sees it: HTTP/1.1 with keep-alive for GET and
HEAD, one clear refusal for anything else, and no request (malformed, oversized, with a
body, or never finished) that stops it answering the next client."""

from __future__ import annotations

import http.client
import socket

import pytest

from mokka.core import probes


@pytest.fixture
def server():
    calls = []

    def staged():
        calls.append("stagedz")
        return 200, "staged"

    served = probes.ProbeServer("127.0.0.1", 0, {"/stagedz": staged,
                                                 "/metrics": lambda: (503, {"ready": False})}).start()
    yield served, calls
    served.stop()


def exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_one_kept_alive_connection_answers_request_after_request(server):
    served, calls = server
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
    for _ in range(3):
        conn.request("GET", "/stagedz?verbose=1")
        reply = conn.getresponse()
        assert (reply.status, reply.read()) == (200, b"staged\n")
        assert reply.getheader("Content-Type") == "text/plain; charset=utf-8"
        assert reply.getheader("Connection") is None
    assert calls == ["stagedz"] * 3
    conn.request("GET", "/metrics")
    reply = conn.getresponse()
    assert (reply.status, reply.read()) == (503, b'{"ready": false}\n')
    conn.close()


def test_unknown_path_names_the_known_ones(server):
    served, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
    conn.request("GET", "/nope")
    reply = conn.getresponse()
    assert (reply.status, reply.read()) == (404, b"no probe at /nope; try /metrics, /stagedz\n")
    conn.close()


def test_close_and_http_1_0_end_the_connection_after_the_reply(server):
    served, _ = server
    assert exchange(served.port, b"GET /stagedz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 7\r\n"
        b"Connection: close\r\n\r\nstaged\n")
    assert exchange(served.port, b"GET /stagedz HTTP/1.0\r\n\r\n").endswith(b"Connection: close\r\n\r\nstaged\n")


def test_head_has_the_length_and_no_body(server):
    served, _ = server
    assert exchange(served.port, b"HEAD /stagedz HTTP/1.1\r\nConnection: close\r\n\r\n") == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 7\r\n"
        b"Connection: close\r\n\r\n")


@pytest.mark.parametrize("raw, status", [
    (b"garbage\r\n\r\n", b"400 Bad Request"),
    (b"GET /stagedz SPDY/3\r\n\r\n", b"400 Bad Request"),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", b"400 Bad Request"),
    (b"GET /stagedz HTTP/1.1\r\nX: " + b"b" * 9000 + b"\r\n\r\n", b"431 Request Header Fields Too Large"),
    (b"GET /stagedz HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", b"431 Request Header Fields Too Large"),
    (b"GET /stagedz HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", b"400 Bad Request"),
    (b"GET /stagedz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"400 Bad Request"),
])
def test_a_malformed_request_is_refused_and_the_connection_closed(server, raw, status):
    served, calls = server
    reply = exchange(served.port, raw)
    assert reply.startswith(b"HTTP/1.1 " + status + b"\r\n")
    assert b"Connection: close\r\n" in reply
    assert calls == []


def test_other_methods_are_refused_and_the_connection_kept(server):
    served, calls = server
    reply = exchange(served.port, b"POST /stagedz HTTP/1.1\r\n\r\nGET /stagedz HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 405 Method Not Allowed\r\n")
    assert reply.endswith(b"\r\n\r\nstaged\n")
    assert calls == ["stagedz"]


def test_a_client_that_never_finishes_does_not_block_the_next(server):
    served, _ = server
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as stuck:
        stuck.sendall(b"GET /stagedz HTTP/1.1\r\nHost: x\r\n")       # no blank line, ever
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
        conn.request("GET", "/stagedz")
        reply = conn.getresponse()
        assert (reply.status, reply.read()) == (200, b"staged\n")
        conn.close()
