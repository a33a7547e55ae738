"""Shared test helpers: probes, profiles, and a real agent process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import NamedTuple

from mokka.agent import desired as ds
from mokka.agent.simulators.publish import is_mountpoint
from mokka.core.mounts import unmount
from mokka.core import profile as prof
from tests.netutil import free_port, http_get  # noqa: F401 (free_port is re-exported)
from tests.waiting import wait_until  # noqa: F401 (tests/native imports it from here)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def probe(port: int, path: str) -> tuple[int, dict]:
    """An agent probe: its bodies are JSON ({} when nothing answered)."""
    status, body = http_get(port, path)
    return status, (json.loads(body) if status else {})


def profile_bytes(name: str, count: int | None = None) -> bytes:
    _, text = prof.read(name)
    return ds.with_num_devices(text, count) if count else text


def kernel_log_standin(root: str) -> str:
    """An empty file at the agent's default kernel log under ``root`` (/dev/kmsg there):
    the agent and ctl append to it, never create it."""
    from mokka.core import names

    kmsg = os.path.join(root, names.KMSG_PATH.lstrip("/"))
    os.makedirs(os.path.dirname(kmsg))
    open(kmsg, "w").close()
    return kmsg


def configmap_dir(directory: str, files: dict[str, bytes], version: str) -> None:
    """Lay out files the way the kubelet does: ..<ts>/, ..data -> ..<ts>, name -> ..data/name."""
    os.makedirs(directory, exist_ok=True)
    stamp = os.path.join(directory, f"..{version}")
    os.makedirs(stamp)
    for name, data in files.items():
        with open(os.path.join(stamp, name), "wb") as f:
            f.write(data)
    tmp = os.path.join(directory, "..data_tmp")
    os.symlink(f"..{version}", tmp)
    os.replace(tmp, os.path.join(directory, "..data"))
    for name in files:
        link = os.path.join(directory, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", name), link)


class AgentProcess:
    def __init__(self, root: str, *args: str, log_dir: str, env: dict | None = None,
                 cwd: str = REPO, new_session: bool = False):
        """``new_session``: lead a process group of its own, as a shell's foreground job does."""
        self.root = root
        self.port = free_port()
        self.log_path = os.path.join(log_dir, f"agent-{time.monotonic_ns()}.log")
        self._log = open(self.log_path, "wb")
        cmd = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root,
               "--health-addr", f"127.0.0.1:{self.port}", "--log-format", "json", *args]
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})}, start_new_session=new_session)

    def probe(self, path: str) -> tuple[int, dict]:
        return probe(self.port, path)

    def log_lines(self) -> list[dict]:
        out = []
        with open(self.log_path, "rb") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append({"msg": line.decode(errors="replace")})
        return out

    def wait_staged(self, digest: str | None = None, timeout: float = 20.0) -> dict:
        def ok():
            self.assert_alive()
            code, body = self.probe("/stagedz")
            return body if code == 200 and (digest is None or body.get("digest") == digest) else None
        return wait_until(ok, f"/stagedz 200 (digest {digest})", timeout=timeout)

    def assert_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"agent exited {self.proc.returncode}:\n" + open(self.log_path).read())

    def terminate(self, timeout: float = 30.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def run_agent(root: str, *args: str, timeout: float = 60.0,
              cwd: str = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mokka", "node-agent", "--host-root", root, "--log-format", "plain",
           *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def unmount_under(root: str) -> None:
    """Last-resort cleanup: a test that failed mid-way must not leak bind mounts."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted(points, key=len, reverse=True):
        if point.startswith(root.rstrip("/") + "/") and is_mountpoint(point):
            unmount(point)


def frozen_package(dest: str) -> str:
    """A snapshot of the mokka package to run from: the agent stages its own source as the
    shim library, and colleagues edit the working tree while tests run."""
    import shutil
    shutil.copytree(os.path.join(REPO, "mokka"), os.path.join(dest, "mokka"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest


class XidNode(NamedTuple):
    """A gb300 node of 4 GPUs the real agent serves, its kernellog announcing Xids."""
    agent: AgentProcess
    overlay: object
    profile: str          # the profile file the agent follows (rewrite it to inject)
    healthy: bytes        # its first contents
    kmsg: str             # the kernel log stand-in
    ctl_env: dict         # what ``mokka ctl`` needs to find the node


def start_xid_node(scratch) -> XidNode:
    """Start the agent on a healthy gb300 profile and wait for its events file."""
    from mokka.core import names
    from mokka.core.overlay import host_overlay

    root, outside, procs = scratch
    kmsg = kernel_log_standin(root)
    profile = os.path.join(outside, "profile.yaml")
    healthy = profile_bytes("gb300", 4)
    with open(profile, "wb") as f:
        f.write(healthy)
    agent = AgentProcess(root, "--profile", profile, "--node-name", "kind-worker-2", "--resync-interval", "0",
                         log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    wait_until(lambda: os.path.exists(os.path.join(ov.driver_config, names.XID_EVENTS_FILE)),
               what="the events file")
    env = {names.ENV_NVML_CONFIG: ov.profile, "MOKKA_CTL_KMSG_PATH": kmsg, "NODE_NAME": "kind-worker-2"}
    return XidNode(agent, ov, profile, healthy, kmsg, env)
