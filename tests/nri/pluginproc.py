"""``python -m mokka nri-plugin`` as a real process against a FakeRuntime, and
what the load tests and benchmarks read of it: /proc status fields, /metrics."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO
from tests.netutil import free_port, http_get
from tests.nri.fakeruntime import FakeRuntime, remove_socket_dir, short_socket_path


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def metric(port: int, name: str) -> int:
    status, body = http_get(port, "/metrics")
    assert status == 200
    for line in body.splitlines():
        if line.startswith(f"mokka_nri_{name} "):
            return int(line.split()[1])
    raise KeyError(name)


class PluginProcess:
    """``python -m mokka nri-plugin`` against a FakeRuntime, log to a file."""

    def __init__(self, tmp_path, *flags: str) -> None:
        self.path = short_socket_path()
        self.port = free_port()
        self.runtime = FakeRuntime(self.path)
        self.log_path = tmp_path / "plugin.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "NRI_PLUGIN_"))}
        env["PYTHONPATH"] = REPO
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mokka", "nri-plugin", f"--socket-path={self.path}",
                 f"--health-addr=127.0.0.1:{self.port}", "--log-format=plain",
                 "--log-level=info", *flags], env=env, cwd=REPO, stderr=log)

    def link(self, n: int = 1):
        link = self.runtime.wait_link(n, timeout=30)
        link.wait_registered(timeout=30)
        link.handshake()
        return link

    def rss(self) -> int:
        return status_kib(self.proc.pid, "VmRSS")

    def hwm(self) -> int:
        return status_kib(self.proc.pid, "VmHWM")

    def log(self) -> str:
        return self.log_path.read_text()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.runtime.close()
        remove_socket_dir(self.path)
