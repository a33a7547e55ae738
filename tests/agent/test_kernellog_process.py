"""kernellog under the real agent: each injected Xid is announced once on the kernel log
(a file standing in for /dev/kmsg), with the node name, and reaches a pynvml process
blocked in nvmlEventSetWait_v2 over the staged mock library."""

from __future__ import annotations

import json
import os

import yaml

from helpers import start_xid_node
from tests.waiting import wait_until

from mokka.core import names
from tests.native.conftest import start_probe
from tests.native.staged import nvml_build  # noqa: F401 (fixture: the agent stages this library)

XID_CRITICAL = 8


def inject(text: bytes, index: int, failure: dict) -> bytes:
    """The profile with a failure block on device ``index`` (edited as a document)."""
    doc = yaml.safe_load(text)
    (device,) = [d for d in doc["devices"] if d["index"] == index]
    device["failure"] = failure
    return yaml.safe_dump(doc, sort_keys=False).encode()


FALLEN = {"mode": "fallen_off_bus"}
XID13 = {"xid": {"code": 13}}


def test_each_xid_announced_once_with_the_node_name_and_delivered_to_nvml(scratch, nvml_build):
    _, outside, _ = scratch
    node = start_xid_node(scratch)
    agent, ov, profile, healthy, kmsg = node.agent, node.overlay, node.profile, node.healthy, node.kmsg

    dev_root = os.path.join(outside, "no-dev")
    os.makedirs(dev_root)
    waiter = start_probe(ov.lib, {names.ENV_DEV_ROOT: dev_root}, "xid", "2")
    try:
        assert json.loads(waiter.stdout.readline()) == ["ready"]
        with open(profile, "wb") as f:
            f.write(inject(inject(healthy, 1, FALLEN), 2, XID13))
        got = [json.loads(waiter.stdout.readline()) for _ in range(2)]
        assert sorted((g["index"], g["type"], g["xid"]) for g in got) == [(1, XID_CRITICAL, 79),
                                                                          (2, XID_CRITICAL, 13)]
        assert waiter.wait(60) == 0, waiter.stderr.read()
    finally:
        waiter.kill()
    want = [
        "<3>NVRM: Xid (PCI:0000:0b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus. "
        "node=kind-worker-2",
        "<3>NVRM: Xid (PCI:0000:4a:00): 13, pid='<unknown>', name=<unknown>, Graphics Engine Exception "
        "node=kind-worker-2",
    ]
    assert open(kmsg).read().splitlines() == want

    with open(profile, "wb") as f:                   # Reload with the same injections: nothing again
        f.write(inject(inject(healthy, 1, FALLEN), 2, XID13).replace(b"\nsystem:", b"\n# edited\nsystem:", 1))
    wait_until(lambda: agent.probe("/stagedz")[1].get("generation") == 3, what="generation 3")
    wait_until(lambda: any(line.get("msg") == "converged" and line.get("generation") == 3
                           for line in agent.log_lines()), what="generation 3 converged")
    with open(profile, "wb") as f:                   # GPU 1 healed, GPU 2 unchanged
        f.write(inject(healthy, 2, XID13))
    wait_until(lambda: any(line.get("msg") == "converged" and line.get("generation") == 4
                           for line in agent.log_lines()), what="generation 4 converged")
    with open(profile, "wb") as f:                   # GPU 1 falls off again: a new injection
        f.write(inject(inject(healthy, 1, FALLEN), 2, XID13))
    wait_until(lambda: len(open(kmsg).read().splitlines()) == 3, what="the third announcement")
    assert open(kmsg).read().splitlines() == want + [want[0]]
    assert agent.terminate() == 0
    assert not os.path.exists(os.path.join(ov.driver_config, names.XID_EVENTS_FILE))
