"""The staging gate against a real local HTTP server and a real lock file.

The agent side is played by a ThreadingHTTPServer on an ephemeral port and by
other descriptors (and another process) holding the lock exclusively.
"""

from __future__ import annotations

import fcntl
import http.server
import os
import subprocess
import sys
import threading
import time

import pytest

from mokka.nri import gate
from mokka.nri.gate import StagingGate

#: The runtime's request budget (NRI client fallback); the gate must stay well inside it.
BUDGET_S = 2.0
#: Scheduling slack for timing assertions on a loaded CI host.
SLACK_S = 0.35


class Agent(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), AgentHandler)
        self.status, self.body, self.mode = 200, b"", "respond"
        self.requests = 0
        self.release = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/stagedz"


class AgentHandler(http.server.BaseHTTPRequestHandler):
    server: Agent

    def do_GET(self):
        self.server.requests += 1
        if self.server.mode == "hang":
            self.server.release.wait(10)
            return
        if self.server.mode == "trickle":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while not self.server.release.wait(0.1):
                self.wfile.write(b"X")
                self.wfile.flush()
            return
        self.send_response(self.server.status)
        if self.server.status in (301, 302):
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def agent():
    server = Agent()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def lock_path(tmp_path):
    path = tmp_path / "staging.lock"
    path.touch()
    return str(path)


def exclusive(path: str) -> int:
    """Hold the lock exclusively on a separate open file description, as the agent does."""
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def can_take_exclusive(path: str) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def timed(fn):
    start = time.monotonic()
    result = fn()
    return result, time.monotonic() - start


DISABLED_CASES = [
    ("neither configured", "", ""),
    ("url only", "http://127.0.0.1:9/stagedz", ""),
    ("lock only", "", "/nonexistent/lock"),
]


@pytest.mark.parametrize("url, lock", [c[1:] for c in DISABLED_CASES], ids=[c[0] for c in DISABLED_CASES])
def test_gate_is_open_unless_both_are_configured(url, lock):
    g = StagingGate(url, lock)
    assert not g.enabled
    assert g.check() == (True, gate.DISABLED)
    assert g.ready() == (True, gate.DISABLED)


STATUS_CASES = [
    ("200 passes", 200, b"", True),
    ("204 passes", 204, b"", True),
    ("503 fails with the agent's reason", 503, b"stage wave failed: gpudriver\n", False),
    ("500 fails", 500, b"", False),
    ("404 fails", 404, b"", False),
    ("302 fails (not followed)", 302, b"", False),
]


@pytest.mark.parametrize("status, body, ok", [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_only_2xx_passes(agent, lock_path, status, body, ok):
    agent.status, agent.body = status, body
    verdict = StagingGate(agent.url, lock_path).check()
    assert verdict.ok is ok
    if not ok:
        assert f"HTTP {status}" in verdict.reason
        assert body.decode().strip() in verdict.reason


def test_lock_is_held_shared_for_the_decision_and_released_after(agent, lock_path):
    g = StagingGate(agent.url, lock_path)
    with g.hold() as verdict:
        assert verdict.ok
        assert not can_take_exclusive(lock_path)      # the agent cannot start staging now
        with g.hold() as concurrent:                   # but other decisions share it
            assert concurrent.ok
    assert can_take_exclusive(lock_path)


def test_lock_is_released_when_the_decision_raises(agent, lock_path):
    with pytest.raises(RuntimeError):
        with StagingGate(agent.url, lock_path).hold():
            raise RuntimeError("decision bug")
    assert can_take_exclusive(lock_path)


def test_staging_in_progress_closes_the_gate_without_asking_the_agent(agent, lock_path):
    fd = exclusive(lock_path)
    try:
        verdict, elapsed = timed(StagingGate(agent.url, lock_path).check)
    finally:
        os.close(fd)
    assert not verdict.ok and "staging" in verdict.reason
    assert gate.LOCK_WAIT_S <= elapsed < gate.LOCK_WAIT_S + SLACK_S
    assert agent.requests == 0


def test_lock_held_by_another_process(agent, lock_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX);"
         " print('held', flush=True); sys.stdin.read()", lock_path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not StagingGate(agent.url, lock_path).check().ok
    finally:
        holder.stdin.close()
        holder.wait(5)
    assert StagingGate(agent.url, lock_path).check().ok


def test_lock_released_within_the_wait_passes(agent, lock_path):
    fd = exclusive(lock_path)
    threading.Timer(0.05, os.close, (fd,)).start()
    verdict, elapsed = timed(StagingGate(agent.url, lock_path).check)
    assert verdict.ok and elapsed < gate.LOCK_WAIT_S + SLACK_S


@pytest.mark.parametrize("mode", ["hang", "trickle"], ids=["agent hangs", "agent trickles bytes"])
def test_a_stuck_agent_is_bounded_well_inside_the_runtime_budget(agent, lock_path, mode):
    agent.mode = mode
    verdict, elapsed = timed(StagingGate(agent.url, lock_path).check)
    assert not verdict.ok and "unreachable" in verdict.reason
    assert gate.HTTP_TIMEOUT_S - 0.05 <= elapsed < gate.HTTP_TIMEOUT_S + SLACK_S < BUDGET_S / 2


def test_lock_wait_plus_stuck_agent_stays_inside_the_budget(agent, lock_path):
    agent.mode = "hang"
    fd = exclusive(lock_path)
    threading.Timer(gate.LOCK_WAIT_S - 0.03, os.close, (fd,)).start()
    verdict, elapsed = timed(StagingGate(agent.url, lock_path).check)
    assert not verdict.ok
    assert elapsed < gate.LOCK_WAIT_S + gate.HTTP_TIMEOUT_S + SLACK_S < BUDGET_S


def test_agent_not_listening(lock_path):
    server = Agent()
    url = server.url
    server.server_close()          # the port is now refused
    verdict, elapsed = timed(StagingGate(url, lock_path).check)
    assert not verdict.ok and "unreachable" in verdict.reason and elapsed < 0.5


def test_missing_lock_file_is_created(agent, tmp_path):
    path = str(tmp_path / "fresh.lock")
    assert StagingGate(agent.url, path).check().ok
    assert os.path.exists(path)


def test_unusable_lock_path_closes_the_gate(agent, tmp_path):
    verdict = StagingGate(agent.url, str(tmp_path / "no-such-dir" / "lock")).check()
    assert not verdict.ok and "staging lock unavailable" in verdict.reason


def test_ready_remembers_the_failure_until_the_gate_opens(agent, lock_path):
    g = StagingGate(agent.url, lock_path)
    assert g.ready().ok and g.last_failure is None
    agent.status, agent.body = 503, b"not staged"
    assert not g.check().ok
    assert "not staged" in g.last_failure
    verdict = g.ready()
    assert not verdict.ok and verdict.reason == g.last_failure
    agent.status, agent.body = 200, b""
    assert g.ready().ok
    assert g.last_failure is None


def test_ready_does_not_wait_on_the_staging_lock(agent, lock_path):
    fd = exclusive(lock_path)
    try:
        g = StagingGate(agent.url, lock_path)
        assert not g.check().ok
        verdict, elapsed = timed(g.ready)     # the probe asks /stagedz directly
    finally:
        os.close(fd)
    assert verdict.ok and elapsed < gate.LOCK_WAIT_S
    assert g.last_failure is None


def test_proxy_environment_is_ignored(agent, lock_path, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert StagingGate(agent.url, lock_path).check().ok


class KeepAliveHandler(AgentHandler):
    protocol_version = "HTTP/1.1"          # as mokka.core.probes serves /stagedz

    def setup(self):
        super().setup()
        self.server.connections += 1

    def do_GET(self):
        if self.server.stopped:           # a process that died drops its connections
            self.close_connection = True
            return
        super().do_GET()


def keepalive_agent(port: int = 0) -> Agent:
    server = Agent.__new__(Agent)
    http.server.ThreadingHTTPServer.__init__(server, ("127.0.0.1", port), KeepAliveHandler)
    server.status, server.body, server.mode = 200, b"{}", "respond"
    server.requests, server.connections, server.release = 0, 0, threading.Event()
    server.stopped = False
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return server


def stop(server: Agent) -> None:
    server.stopped = True
    server.release.set()
    server.shutdown()
    server.server_close()


def test_checks_reuse_one_connection_and_redial_after_an_agent_restart(lock_path):
    server = keepalive_agent()
    port = server.server_address[1]
    gate = StagingGate(server.url, lock_path)
    try:
        assert all(gate.check().ok for _ in range(5))
        assert (server.requests, server.connections) == (5, 1)   # one connection, kept alive
        stop(server)                                              # the agent restarts ...
        server = keepalive_agent(port)
        assert gate.check().ok                                    # ... the stale one is redialled
        assert server.connections == 1
    finally:
        stop(server)


@pytest.mark.parametrize("verdict, outcome", [
    ((True, "node agent reports the tree staged"), "open"),
    ((False, "node agent is staging (staging lock held)"), "staging"),
    ((False, "node agent unreachable at http://x/stagedz: refused"), "unreachable"),
    ((False, "staging lock unavailable: EACCES"), "lock_unavailable"),
    ((False, "node agent not staged (HTTP 503): tearing down"), "not_staged"),
])
def test_gate_outcome_is_a_bounded_label(verdict, outcome):
    assert gate.outcome(gate.Verdict(*verdict)) == outcome


class RawAgent:
    """Answers every request on a connection with the same raw bytes (kept open)."""

    def __init__(self, reply: bytes):
        import socket
        self.reply, self.requests = reply, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/stagedz"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            data = b""
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
                while b"\r\n\r\n" in data:
                    _, data = data.split(b"\r\n\r\n", 1)
                    self.requests += 1
                    conn.sendall(self.reply)
                    if b"Connection: close" in self.reply or b"HTTP/1.0" in self.reply:
                        return

    def close(self):
        self.sock.close()


REPLY_CASES = [
    ("a body over the limit is cut to its first 200 bytes",
     b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 500\r\n\r\n" + b"x" * 500,
     False, "x" * 200),
    ("a chunked body", b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"7\r\nnot sta\r\n3\r\nged\r\n0\r\n\r\n", False, "not staged"),
    ("a body that ends with the connection (HTTP/1.0)",
     b"HTTP/1.0 503 Service Unavailable\r\n\r\ntearing down", False, "tearing down"),
    ("header names in any case", b"HTTP/1.1 200 OK\r\ncontent-LENGTH: 2\r\n\r\n{}", True, ""),
]


@pytest.mark.parametrize("reply, ok, reason", [c[1:] for c in REPLY_CASES],
                         ids=[c[0] for c in REPLY_CASES])
def test_replies_are_read_whatever_their_framing_and_the_next_check_still_works(
        lock_path, reply, ok, reason):
    agent = RawAgent(reply)
    try:
        g = StagingGate(agent.url, lock_path)
        for _ in range(2):
            verdict = g.check()
            assert verdict.ok is ok
            assert reason in verdict.reason
            if not ok:
                assert verdict.reason.endswith(reason)
        assert agent.requests == 2
    finally:
        agent.close()


@pytest.mark.parametrize("reply", [b"SSH-2.0-OpenSSH_9.2\r\n\r\n", b"HTTP/1.1 OK\r\n\r\n"],
                         ids=["not HTTP", "no status code"])
def test_a_reply_that_is_not_http_closes_the_gate(lock_path, reply):
    agent = RawAgent(reply)
    try:
        verdict, elapsed = timed(StagingGate(agent.url, lock_path).check)
        assert not verdict.ok and "malformed status line" in verdict.reason
        assert elapsed < gate.HTTP_TIMEOUT_S
    finally:
        agent.close()
