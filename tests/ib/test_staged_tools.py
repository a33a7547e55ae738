"""The zipapp's node agent stages the IB tools and the four shims; the staged tools, run
with exactly the environment the plugin gives an InfiniBand-selected container (and no
other), reach the agent's mock-ib: sminfo, ibping by LID and GUID, iblinkinfo,
ibnetdiscover."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from mokka.core import names
from mokka.core.overlay import host_overlay, ib_env
from tests.agent.helpers import probe
from tests.netutil import free_port
from tests.peers import peer
from tests.waiting import wait_until

NODE = "node-a"
SM_LID, LID_3, GUID_3 = 17304, 17307, "0xa088c203876b2607"      # h100, node-a


@pytest.fixture(scope="module")
def staged(zipapp, tmp_path_factory):
    ib_root = peer("IB_ROOT")
    root = str(tmp_path_factory.mktemp("host"))
    log = open(tmp_path_factory.mktemp("logs") / "agent.log", "wb")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_", "MOKKA_"))}
    proc = subprocess.Popen([sys.executable, zipapp, "node-agent", "--host-root", root,
                             "--health-addr", f"127.0.0.1:{port}", "--profile", "h100",
                             "--node-name", NODE, "--ib-tools", ib_root, "--log-format", "plain"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_until(lambda: proc.poll() is not None or probe(port, "/readyz")[0] == 200,
                   timeout=120, what="the zipapp's agent ready")
        assert proc.poll() is None, open(log.name).read()
        yield host_overlay(root)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, open(log.name).read()


def run(ov, tool: str, *args: str) -> subprocess.CompletedProcess:
    """A staged tool with the plugin's InfiniBand environment and nothing else."""
    env = {"PATH": f"{ov.bin}:/usr/bin:/bin", "LD_LIBRARY_PATH": ov.lib,
           "LD_PRELOAD": ":".join(ov.shim(s) for s in names.LD_PRELOAD_SHIMS),
           names.ENV_NVML_VISIBLE_DEVICES: names.VISIBLE_NONE, **ib_env(ov)}
    return subprocess.run([os.path.join(ov.bin, tool), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def test_the_staged_sminfo_reports_a_master(staged):
    res = run(staged, "sminfo")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"sminfo: sm lid {SM_LID} sm guid 0xa088c203876b2601, ")
    assert res.stdout.endswith("state 3 SMINFO_MASTER\n")


def test_the_staged_ibping_by_lid_and_by_guid(staged):
    by_lid = run(staged, "ibping", "-c", "3", str(LID_3))
    assert by_lid.returncode == 0, by_lid.stderr
    assert len(re.findall(rf"^Pong from {NODE} \(Lid {LID_3}\)", by_lid.stdout, re.M)) == 3
    by_guid = run(staged, "ibping", "-c", "1", "-G", GUID_3)
    assert by_guid.returncode == 0, by_guid.stderr
    assert by_guid.stdout.startswith(f"Pong from {NODE} (Lid {LID_3})")


def test_the_staged_iblinkinfo_and_ibnetdiscover_show_every_hca(staged):
    links = run(staged, "iblinkinfo")
    assert links.returncode == 0, links.stderr
    assert sorted(re.findall(r"^CA: node-a (mlx5_\d):", links.stdout, re.M)) == \
        [f"mlx5_{i}" for i in range(8)]
    topo = run(staged, "ibnetdiscover")
    assert topo.returncode == 0, topo.stderr
    assert sorted(re.findall(r'^Ca\t1 "H-[0-9a-f]+"\t\t# "node-a (mlx5_\d)"$', topo.stdout, re.M)) \
        == [f"mlx5_{i}" for i in range(8)]
