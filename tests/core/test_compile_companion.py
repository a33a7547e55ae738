"""``mokka compile --companion FILE``: the command the C library names when a
YAML has no compiled companion beside it."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from mokka.core import profile as prof


def run(*args):
    return subprocess.run([sys.executable, "-m", "mokka", "compile", *args],
                          capture_output=True, text=True)


def test_profile_gets_config_nvml_and_state_json(tmp_path):
    _, text = prof.read("t4")
    (tmp_path / "config.yaml").write_bytes(text)
    res = run("--companion", str(tmp_path / "config.yaml"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"wrote {tmp_path}/config.nvml (profile)\n"
    digest = "sha256:" + hashlib.sha256((tmp_path / "config.yaml").read_bytes()).hexdigest()
    lines = (tmp_path / "config.nvml").read_text().splitlines()
    assert lines[:2] == ["# mokka-nvml state 2", f"digest {digest}"]
    assert "gpu.len 4" in lines                       # t4: four GPUs
    assert not (tmp_path / "state.json").exists()


TOPOLOGY = ("domains:\n- name: d\n  uuid: 11111111-2222-3333-4444-555555555555\n"
            "  cliques:\n  - id: 3\n    nodes: [worker-1]\n")


def test_overrides_document(tmp_path):
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "gpu0.yaml").write_text("{utilization: {gpu: 5}}\n")
    assert run("--companion", str(tmp_path / "overrides" / "gpu0.yaml")).returncode == 0
    assert (tmp_path / "overrides" / "gpu0.nvml").read_text().splitlines()[3:] == ["utilization.gpu 5"]
    assert not (tmp_path / "state.json").exists()


def test_a_topology_document_has_no_companion_the_profile_carries_it(tmp_path):
    """The overlay is applied once, when the profile compiles: the library reads no topology."""
    (tmp_path / "topo.yaml").write_text(TOPOLOGY)
    res = run("--companion", str(tmp_path / "topo.yaml"))
    assert res.returncode == 1 and not (tmp_path / "topo.nvml").exists()
    assert "--topology" in res.stderr and "--node-name" in res.stderr
    (tmp_path / "config.yaml").write_bytes(prof.read("gb300")[1])
    res = run("--companion", str(tmp_path / "config.yaml"), "--topology", str(tmp_path / "topo.yaml"),
              "--node-name", "worker-1")
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "config.nvml").read_text().splitlines()
    assert "gpu.0.fabric.clique_id 3" in lines
    assert "gpu.0.fabric.cluster_uuid 11111111-2222-3333-4444-555555555555" in lines


def test_an_overrides_file_for_every_gpu_at_once_is_refused_with_the_layout(tmp_path):
    path = tmp_path / "overrides.yaml"
    path.write_text("version: 1\ndevices:\n  '0': {utilization: {gpu: 5}}\n")
    res = run("--companion", str(path))
    assert res.returncode == 1 and not (tmp_path / "overrides.nvml").exists()
    assert res.stderr == (f"compile: {path}: an overrides file of one document for every GPU: write each scope "
                          "as its own file in overrides/ beside config.yaml (all.yaml, gpu0.yaml, ...) and "
                          "compile each\n")


@pytest.mark.parametrize("content, message", [
    (None, "cannot read: No such file or directory"),
    ("a: [1,\n", "invalid YAML"),
    ("domains: 3\n", "a topology document has no companion"),
])
def test_bad_input_is_one_line_and_exit_1(tmp_path, content, message):
    path = tmp_path / "x.yaml"
    if content is not None:
        path.write_text(content)
    res = run("--companion", str(path))
    assert res.returncode == 1
    assert len(res.stderr.splitlines()) == 1 and message in res.stderr and str(path) in res.stderr
    assert not (tmp_path / "x.nvml").exists()
