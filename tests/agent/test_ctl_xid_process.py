"""``mokka ctl xid GPU CODE`` on a node the real agent serves: the Xid reaches a pynvml
process blocked in nvmlEventSetWait_v2 over the staged mock library and the kernel log
(a file standing in for /dev/kmsg), through kernellog's own channel: the same events
file, lock and numbering, so the agent's next announcement neither repeats nor reuses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from helpers import AgentProcess, profile_bytes, start_xid_node
from tests.waiting import wait_until
from test_kernellog_process import XID13, XID_CRITICAL, inject

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.native.conftest import start_probe
from tests.native.staged import nvml_build  # noqa: F401 (fixture: the agent stages this library)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ctl(*args: str, env: dict) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MOKKA_", "MOCK_"))}
    full.update(PYTHONPATH=REPO, **env)
    return subprocess.run([sys.executable, "-m", "mokka", "ctl", *args], env=full,
                          capture_output=True, text=True, timeout=60)


def test_ctl_xid_reaches_event_waiters_and_the_kernel_log(scratch, nvml_build):
    _, outside, _ = scratch
    node = start_xid_node(scratch)
    ov, profile, healthy, kmsg, env = node.overlay, node.profile, node.healthy, node.kmsg, node.ctl_env
    events = os.path.join(ov.driver_config, names.XID_EVENTS_FILE)

    dev_root = os.path.join(outside, "no-dev")
    os.makedirs(dev_root)
    waiter = start_probe(ov.lib, {names.ENV_DEV_ROOT: dev_root}, "xid", "2")
    try:
        assert json.loads(waiter.stdout.readline()) == ["ready"]
        done = ctl("xid", "1", "79", env=env)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["seq"] == 1
        assert json.loads(waiter.stdout.readline()) == {"index": 1, "type": XID_CRITICAL,
                                                        "xid": 79, "gi": 0xFFFFFFFF}
        with open(profile, "wb") as f:                     # the agent injects one of its own
            f.write(inject(healthy, 2, XID13))
        assert json.loads(waiter.stdout.readline()) == {"index": 2, "type": XID_CRITICAL,
                                                        "xid": 13, "gi": 0xFFFFFFFF}
        assert waiter.wait(60) == 0, waiter.stderr.read()
    finally:
        waiter.kill()
    wait_until(lambda: len(open(kmsg).read().splitlines()) == 2, what="both kernel log lines")
    assert open(kmsg).read().splitlines() == [
        "<3>NVRM: Xid (PCI:0000:0b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus. "
        "node=kind-worker-2",
        "<3>NVRM: Xid (PCI:0000:4a:00): 13, pid='<unknown>', name=<unknown>, Graphics Engine Exception "
        "node=kind-worker-2",
    ]
    doc = yaml.safe_load(open(events))
    assert doc["last_seq"] == 2 and [e["seq"] for e in doc["events"]] == [2]



class HostKernelLog:
    """The host's real kernel log, read from its end at creation (non-blocking /dev/kmsg)."""

    def __init__(self):
        try:
            self.fd = os.open(names.KMSG_PATH, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise AssertionError(f"cannot read {names.KMSG_PATH} ({exc.strerror}): this test "
                                 "compares the host's kernel log before and after, as root")
        with open(names.KMSG_PATH, "rb", buffering=0) as whole:   # the reader works: records exist
            assert whole.read(8192), f"{names.KMSG_PATH} gave no record"
        os.lseek(self.fd, 0, os.SEEK_END)

    def new_records(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(os.read(self.fd, 8192).decode(errors="replace"))
            except BlockingIOError:
                return out
            except BrokenPipeError:         # records overwritten while we read: go on after them
                continue


def test_a_scratch_root_never_reaches_the_hosts_kernel_log(scratch, nvml_build):
    """The agent's kernellog and ``ctl xid`` on a scratch root write the driver's line only
    where the staged node keeps its kernel log (/dev/kmsg under the root; absent here), and
    ``ctl xid`` says so; the host's /dev/kmsg gets nothing."""
    root, outside, procs = scratch
    node = f"kmsg-probe-{os.getpid()}-{os.urandom(4).hex()}"
    host_log = HostKernelLog()
    profile = os.path.join(outside, "profile.yaml")
    with open(profile, "wb") as f:
        f.write(inject(profile_bytes("gb300", 4), 2, XID13))       # the agent announces one too
    agent = AgentProcess(root, "--profile", profile, "--node-name", node, "--resync-interval", "0",
                         log_dir=outside)
    procs.append(agent)
    ov = host_overlay(root)
    agent.wait_staged()
    events = os.path.join(ov.driver_config, names.XID_EVENTS_FILE)
    wait_until(lambda: os.path.exists(events) and yaml.safe_load(open(events))["last_seq"] == 1,
               what="kernellog's announcement")
    with open(ov.kmsg_record) as f:
        assert json.loads(f.read()) == {"kmsg": "/dev/kmsg", "overlay": "/var/lib/nvml-mock"}
    env = {names.ENV_NVML_CONFIG: ov.profile, "NODE_NAME": node}

    done = ctl("xid", "1", "79", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["seq"] == 2
    assert done.stderr == (f"ctl: Xid 79: reached the mock NVML only: cannot open the kernel "
                           f"log {root}/dev/kmsg (the node's, as its agent recorded it in "
                           f"{ov.kmsg_record}): No such file or directory; name another with "
                           f"--kmsg-path or MOKKA_CTL_KMSG_PATH\n")
    named = os.path.join(outside, "kmsg")                            # positive control: named
    open(named, "w").close()
    done = ctl("xid", "3", "48", "--kmsg-path", named, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"ctl: Xid 48: kernel log line written to {named} (named by --kmsg-path)\n"
    assert open(named).read() == ("<3>NVRM: Xid (PCI:0000:4b:00): 48, pid='<unknown>', name=<unknown>, "
                                  f"An uncorrectable double bit error (DBE) has been detected on GPU node={node}\n")
    assert yaml.safe_load(open(events))["last_seq"] == 3
    assert agent.terminate() == 0
    assert [r for r in host_log.new_records() if node in r] == []
