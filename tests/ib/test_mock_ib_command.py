"""``mokka mock-ib`` as a real process: serve, SIGHUP reload, SIGTERM, one-line errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from mokka.core import names
from mokka.core.overlay import host_overlay
from tests.conftest import REPO, run_mokka
from tests.ib.test_agent_reload import hca_names, node_desc
from tests.ib.test_server import Client
from tests.waiting import wait_until

# node-a on h100 (8 HCAs) then on a100 (8 HCAs, prefix a288c2...): mlx5_1's LIDs.
H100_MLX5_1 = 17305


def test_serves_reloads_on_sighup_and_removes_its_socket_on_sigterm(tmp_path):
    profile = tmp_path / "profile.yaml"
    profile.write_bytes(open(os.path.join(REPO, "mokka/core/profiles/h100.yaml"), "rb").read())
    env = {**os.environ, "PYTHONPATH": REPO, "NODE_NAME": "node-a",
           "MOKKA_PROFILE": str(profile), "MOKKA_MOCK_IB_HOST_ROOT": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "mokka", "mock-ib", "--log-format", "plain"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sock = host_overlay(str(tmp_path)).ib_ping_socket
    try:
        wait_until(lambda: os.path.exists(sock), what="the socket")
        client = Client(sock).open_port("mlx5_1")
        assert node_desc(client, H100_MLX5_1) == (0, b"node-a mlx5_1")
        text = profile.read_text().replace('node_desc_template: "{node_name} mlx5_{idx}"',
                                           'node_desc_template: "{node_name} hca{idx}"')
        profile.write_text(text)
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: node_desc(client, H100_MLX5_1) == (0, b"node-a hca1"),
                   what="the reloaded node description on the open port")
        assert hca_names(sock)[:4] == bytes.fromhex("00000008")
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert not os.path.exists(sock)


def test_help_names_every_flags_environment_variable():
    res = run_mokka("mock-ib", "--help")
    assert res.returncode == 0
    for env in ("MOKKA_PROFILE", "NODE_NAME", "MOKKA_MOCK_IB_HOST_ROOT",
                "MOKKA_MOCK_IB_OVERLAY_HOST_PATH", "MOKKA_MOCK_IB_SOCKET",
                "MOKKA_MOCK_IB_RELAY_LISTEN", names.ENV_IB_PEERS):
        assert env in res.stdout.replace("\n", " ").replace("  ", " ")


def test_an_unknown_profile_is_one_line_and_exit_1(tmp_path):
    res = run_mokka("mock-ib", "--profile", "nope", "--host-root", str(tmp_path))
    assert res.returncode == 1
    assert res.stderr.startswith("mock-ib: ") and res.stderr.count("\n") == 1


def test_a_relay_outside_loopback_is_one_line_and_exit_1(tmp_path):
    res = run_mokka("mock-ib", "--host-root", str(tmp_path), "--relay-listen", "192.168.1.1:18515")
    assert res.returncode == 1
    assert res.stderr == "mock-ib: relay address '192.168.1.1:18515' is outside 127.0.0.0/8\n"
