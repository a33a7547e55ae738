"""Visibility, the topology overlay, fabric state auto and check-fabric's exit codes."""

from __future__ import annotations

import pytest
import yaml

from mokka.core import names


def _uuids(res) -> list:
    return [line.split("UUID: ")[1].rstrip(")") for line in res.stdout.splitlines()]


def test_some_dev_nodes_show_only_those_renumbered(staged, dev_root):
    ov = staged("h100")
    dev_root.touch(2, 5)
    res = ov.run(["-L"], str(dev_root))
    gpus = ov.state["gpus"]
    assert res.stdout.splitlines() == [f"GPU 0: {gpus[2]['name']} (UUID: {gpus[2]['uuid']})",
                                       f"GPU 1: {gpus[5]['name']} (UUID: {gpus[5]['uuid']})"]


@pytest.mark.parametrize("nodes", [(), tuple(range(8))], ids=["no nodes: every GPU", "all nodes: every GPU"])
def test_all_or_no_dev_nodes_show_every_gpu(staged, dev_root, nodes):
    ov = staged("h100")
    dev_root.touch(*nodes)
    assert _uuids(ov.run(["-L"], str(dev_root))) == [g["uuid"] for g in ov.state["gpus"]]


def test_visible_devices_env_wins_over_dev_nodes(staged, dev_root):
    ov = staged("a100")
    dev_root.touch(0)
    gpus = ov.state["gpus"]
    res = ov.run(["-L"], str(dev_root), MOCK_NVML_VISIBLE_DEVICES=f"3,{gpus[6]['uuid']}")
    assert _uuids(res) == [gpus[3]["uuid"], gpus[6]["uuid"]]
    assert res.stdout.startswith("GPU 0:")
    assert _uuids(ov.run(["-L"], str(dev_root), MOCK_NVML_VISIBLE_DEVICES="all")) == [g["uuid"] for g in gpus]


@pytest.mark.parametrize("args, code, text", [
    (["-L"], 0, "No devices found."),                     # as NVIDIA's 550 does
    ([], 6, "No devices were found"),
    (["-q"], 6, "No devices were found"),
    (["--query-gpu=name", "--format=csv"], 6, "No devices were found"),
    (["topo", "-m"], 255, "Failed to run topology matrix"),
])
def test_visible_none_reports_no_devices(staged, dev_root, args, code, text):
    res = staged("a100").run(args, str(dev_root), MOCK_NVML_VISIBLE_DEVICES="none")
    assert res.returncode == code
    assert res.stdout.strip() == text


# The value rules of MOCK_NVML_VISIBLE_DEVICES are rows of the corpus
# (tests/corpus/engine_cases.py) the library passes (tests/native/test_engine_corpus.py).


def test_no_state_is_a_clear_error_not_a_traceback(staged, dev_root, tmp_path):
    ov = staged("a100")
    res = ov.run(["-L"], str(dev_root), MOCK_NVML_CONFIG=str(tmp_path / "missing.yaml"))
    assert res.returncode == 9
    assert "MOCK_NVML_CONFIG" in res.stderr and "Traceback" not in res.stderr


TOPOLOGY = """version: 1
domains:
  - name: rack-a
    uuid: "00000000-0000-0000-0000-0000000000cd"
    cliques:
      - id: 0
        nodes: [worker-1, worker-2]
      - id: 7
        nodes: [worker-3]
"""


def test_topology_compiled_for_two_nodes_gives_them_two_cliques(fresh, dev_root):
    doc = yaml.safe_load(TOPOLOGY)
    seen = {}
    for node in ("worker-1", "worker-3"):
        ov = fresh("gb300", doc, node)
        q = ov.run(["-q", "-d", "FABRIC"], str(dev_root))
        cliques = {l.split(":")[1].strip() for l in q.stdout.splitlines() if "CliqueId" in l}
        uuids = {l.split(": ")[1].strip() for l in q.stdout.splitlines() if "ClusterUUID" in l}
        cf = ov.run([], str(dev_root), exe=ov.check_fabric)
        assert cf.returncode == 0, cf.stderr
        assert {l.split(": ")[1] for l in cf.stdout.splitlines() if "cliqueId" in l} == cliques
        assert uuids == {"00000000-0000-0000-0000-0000000000cd"}
        seen[node] = cliques
    assert seen == {"worker-1": {"0"}, "worker-3": {"7"}}


def test_the_library_reads_no_topology_document_and_no_node_name(fresh, dev_root, tmp_path):
    """The overlay is applied once, at compile: a process's NODE_NAME and MOCK_TOPOLOGY_CONFIG
    (a document naming it elsewhere, or one that does not parse) change nothing and warn of nothing."""
    ov = fresh("gb200", yaml.safe_load(TOPOLOGY), "worker-3")
    other = tmp_path / "other.yaml"
    other.write_text(TOPOLOGY.replace("[worker-3]", "[worker-9]").replace("[worker-1, worker-2]",
                                                                          "[worker-1, worker-2, worker-3]"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("domains: [1, 2")
    for env in ({}, {"NODE_NAME": "worker-1", "MOCK_TOPOLOGY_CONFIG": str(other)},
                {"NODE_NAME": "worker-3", "MOCK_TOPOLOGY_CONFIG": str(bad)}):
        res = ov.run(["--query-gpu=fabric.cliqueId", "--format=csv,noheader"], str(dev_root), **env)
        assert res.returncode == 0 and res.stderr == ""
        assert set(res.stdout.split()) == {"7"}


def test_a_topology_never_adds_fabric_to_a_profile_without_it(fresh, dev_root):
    a100 = fresh("a100", yaml.safe_load(TOPOLOGY), "worker-3")
    res = a100.run([], str(dev_root), exe=a100.check_fabric)
    assert res.returncode == 2 and "NOT_SUPPORTED (0)" in res.stdout


def test_fabric_auto_follows_the_fabricmanager_marker(staged, dev_root, tmp_path):
    ov = staged("h100")
    state_dir = tmp_path / "fm"
    state_dir.mkdir()
    res = ov.run([], str(dev_root), exe=ov.check_fabric, MOCK_FABRICMANAGER_STATE_DIR=str(state_dir))
    assert "state IN_PROGRESS (2)" in res.stdout and "COMPLETED" not in res.stdout
    (state_dir / names.FABRICMANAGER_READY).touch()
    res = ov.run([], str(dev_root), exe=ov.check_fabric, MOCK_FABRICMANAGER_STATE_DIR=str(state_dir))
    assert res.returncode == 0 and res.stdout.count("state COMPLETED (3)") == 8


@pytest.mark.parametrize("profile,code", [("gb300", 0), ("h100", 0), ("a100", 2), ("t4", 2)])
def test_check_fabric_exit_codes(staged, dev_root, profile, code):
    ov = staged(profile)
    res = ov.run([], str(dev_root), exe=ov.check_fabric)
    assert res.returncode == code, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"Discovered {len(ov.state['gpus'])} GPU(s)"
    assert lines[1] == f"GPU 0 ({ov.state['gpus'][0]['uuid']})"


def test_check_fabric_other_errors_exit_1(staged, dev_root, tmp_path):
    ov = staged("gb300")
    res = ov.run([], str(dev_root), exe=ov.check_fabric, MOCK_NVML_CONFIG=str(tmp_path / "nope.json"))
    assert res.returncode == 1 and "Traceback" not in res.stderr


def test_fabric_auto_finds_the_state_dir_beside_the_driver_config(fresh, dev_root):
    ov = fresh("h100")
    res = ov.run([], str(dev_root), exe=ov.check_fabric)
    assert res.stdout.count("state COMPLETED (3)") == 8, "no state dir: no fabricmanager, auto is completed"
    state_dir = ov.root / names.DRIVER_FABRIC_STATE_DIR
    state_dir.mkdir()
    res = ov.run([], str(dev_root), exe=ov.check_fabric)
    assert res.stdout.count("state IN_PROGRESS (2)") == 8 and "COMPLETED" not in res.stdout
    (state_dir / names.FABRICMANAGER_READY).touch()
    res = ov.run([], str(dev_root), exe=ov.check_fabric)
    assert res.returncode == 0 and res.stdout.count("state COMPLETED (3)") == 8


def test_fabric_state_dir_is_found_only_beside_a_config_dir(fresh, dev_root, tmp_path):
    ov = fresh("h100")
    (ov.root / names.DRIVER_FABRIC_STATE_DIR).mkdir()
    elsewhere = tmp_path / "elsewhere"            # <x>/elsewhere/config.yaml: not a driver root
    elsewhere.mkdir()
    for name in (names.PROFILE_FILE, "config.nvml"):
        (elsewhere / name).write_bytes((ov.config_dir / name).read_bytes())
    (tmp_path / names.DRIVER_FABRIC_STATE_NAME).mkdir()
    res = ov.run([], str(dev_root), exe=ov.check_fabric, MOCK_NVML_CONFIG=str(elsewhere / names.PROFILE_FILE))
    assert res.returncode == 0 and res.stdout.count("state COMPLETED (3)") == 8
