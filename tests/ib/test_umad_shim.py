"""libibmockumad in a real process: many threads on many ports at once, and nothing
at all when MOCK_IB does not say full."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from mokka.core import log, names
from mokka.ib.daemon import MockIb
from tests.conftest import REPO
from tests.ib.helpers import NODE_A
from tests.ib.tools import umad_shim  # noqa: F401 (fixture)
from tests.native.conftest import SANITIZER_PRELOAD
from tests.peers import peer

PROBE = os.path.join(REPO, "tests", "ib", "umad_probe.py")


@pytest.fixture(scope="module")
def socket_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("root") / names.IB_PING_SOCKET)
    daemon = MockIb(path, NODE_A, log.get("test-umad-shim")).start()
    yield path
    daemon.stop()


def probe(shim: str, env: dict, threads, rounds: int, *lids: str) -> dict:
    libdir = os.path.join(peer("IB_ROOT"), "usr", "lib", f"{platform.machine()}-linux-gnu")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "LD_"))}
    asan = os.environ.get(SANITIZER_PRELOAD)
    full["LD_PRELOAD"] = ":".join(([asan] if asan else []) + [shim])
    full.update(env)
    res = subprocess.run([sys.executable, PROBE, os.path.join(libdir, "libibumad.so.3"),
                          str(threads), str(rounds), *lids], env=full, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_eight_threads_on_eight_ports_each_get_their_own_answers(socket_path, umad_shim):
    out = probe(umad_shim, {names.ENV_IB: names.IB_FULL, names.ENV_IB_PING_SOCKET: socket_path},
                8, 40, "0x7126", "0x7127")
    assert out["errors"] == []
    assert out["results"] == {f"t{i}": [[0, f"node-a mlx5_{i % 2}"]] for i in range(8)}


@pytest.mark.parametrize("env", [
    {names.ENV_IB: names.IB_OFF}, {names.ENV_IB: names.IB_SYSFS}, {},
    {names.ENV_IB: names.IB_FULL},
], ids=["MOCK_IB=off", "MOCK_IB=sysfs", "nothing set", "full but no socket named"])
def test_without_the_full_tier_and_a_socket_the_real_libibumad_answers(socket_path, umad_shim,
                                                                       env):
    env = {**env, **({names.ENV_IB_PING_SOCKET: socket_path}
                     if env.get(names.ENV_IB) in (names.IB_OFF, names.IB_SYSFS) else {})}
    out = probe(umad_shim, env, 1, 1, "0x7126")
    # The real umad_open_port finds no /dev/infiniband on this machine.
    assert out["results"] == {} and out["errors"][0].startswith("open/register: -")


def test_a_socket_path_too_long_for_sun_path_fails_with_enametoolong(umad_shim):
    out = probe(umad_shim, {names.ENV_IB: names.IB_FULL,
                            names.ENV_IB_PING_SOCKET: "/" + "x" * 200}, 1, 1, "0x7126")
    assert out["errors"] == ["open/register: -36 -22"]  # ENAMETOOLONG, then EINVAL


def test_a_reader_blocked_forever_does_not_hold_up_another_readers_timeout(socket_path,
                                                                           umad_shim):
    out = probe(umad_shim, {names.ENV_IB: names.IB_FULL, names.ENV_IB_PING_SOCKET: socket_path},
                "shared", 0, "0x7127")
    assert out == {"timed_out": -110, "sent": 0, "alive": False,
                   "reader": {"agent": 0, "desc": "node-a mlx5_1"}}
