"""NVIDIA's own ``nvidia-smi -r`` / ``--gpu-reset`` (550) over the mock library on a
staged node: it removes the GPUs' override documents (``mokka ctl set`` or written by
hand, in any YAML style) exactly as ``mokka ctl reset N`` does, and leaves the
others and the one for every GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from mokka.core import profile as prof
from tests.native.staged import ctl, nvml_build, ok, staged_node  # noqa: F401 (fixtures)

QUERY = ["--query-gpu=index,temperature.gpu,power.draw", "--format=csv,noheader"]
SUCCESS_1 = "GPU 00000000:1B:00.0 was successfully reset.\nAll done.\n"


@pytest.fixture(scope="module")
def staged(staged_node, tmp_path_factory):
    # An h100 node of this module's own: other modules' nodes keep their overrides to themselves.
    path = tmp_path_factory.mktemp("reset-profile") / "h100-reset.yaml"
    path.write_bytes(prof.load("h100").text)
    return staged_node(str(path))


@pytest.fixture
def node(staged):
    yield staged
    assert ctl(staged, "reset").returncode == 0


def documents(node) -> list:
    path = os.path.join(node.overlay.driver_config, "overrides")
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def write_by_hand(node, name: str, text: bytes) -> None:
    """A document as a user writes one, compiled with the command the library names."""
    directory = os.path.join(node.overlay.driver_config, "overrides")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(text)
    done = subprocess.run([sys.executable, "-m", "mokka", "compile", "--companion", os.path.join(directory, name)],
                          capture_output=True, text=True, env=node.env(), timeout=60)
    assert done.returncode == 0, done.stderr


def test_reset_clears_that_gpu_only_and_prints_nvidias_success(node):
    ok(ctl(node, "set", "0", "temperature=90"))
    ok(ctl(node, "set", "1", "temperature=90", "power=300"))
    done = node.run(["-r", "-i", "1"])
    assert (done.returncode, done.stdout) == (0, SUCCESS_1), done.stderr
    assert documents(node) == ["gpu0.nvml", "gpu0.yaml"]
    for run in (node.run, node.run_python):
        rows = ok(run(QUERY)).splitlines()
        assert rows[:3] == ["0, 90, 120.00 W", "1, 34, 120.00 W", "2, 34, 120.00 W"]   # GPU 1: the profile's


def test_the_long_option_and_our_nvidia_smi_do_the_same(node):
    ok(ctl(node, "set", "1", "temperature=90"))
    done = node.run(["--gpu-reset", "-i", "1"])
    assert (done.returncode, done.stdout) == (0, SUCCESS_1), done.stderr
    assert documents(node) == []
    ok(ctl(node, "set", "1", "temperature=90"))
    assert ok(node.run_python(["--gpu-reset", "-i", "1"])) == SUCCESS_1
    assert documents(node) == []
    assert ok(node.run(QUERY)).splitlines()[1] == "1, 34, 120.00 W"


def test_reset_of_every_gpu_keeps_the_overrides_for_all(node):
    write_by_hand(node, "all.yaml", b"power:\n  current_draw_mw: 250000\n")
    write_by_hand(node, "gpu3.yaml", b"thermal: {temperature_gpu_c: 77}\n")
    ok(ctl(node, "set", "5", "temperature=78"))
    done = node.run(["-r"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("was successfully reset.") == 8 and done.stdout.endswith("All done.\n")
    assert documents(node) == ["all.nvml", "all.yaml"]
    assert ok(node.run(QUERY)).splitlines()[3] == "3, 34, 250.00 W"


@pytest.mark.parametrize("text", [
    b"# written by hand\nthermal:   # the hot one\n  temperature_gpu_c: 95\n",
    b"{thermal: {temperature_gpu_c: 95}}\n",
    b"hot: &hot {temperature_gpu_c: 95}\nthermal: *hot\n",
    b'{"thermal": {"temperature_gpu_c": 95}}\n',
], ids=["block with comments", "flow", "anchor", "JSON"])
def test_a_document_written_by_hand_in_any_style_is_read_and_reset(node, text):
    write_by_hand(node, "gpu1.yaml", text)
    write_by_hand(node, "gpu2.yaml", b"thermal: {temperature_gpu_c: 60}\n")
    assert ok(node.run(QUERY)).splitlines()[1:3] == ["1, 95, 120.00 W", "2, 60, 120.00 W"]
    assert ok(node.run(["-r", "-i", "1"])) == SUCCESS_1
    assert documents(node) == ["gpu2.nvml", "gpu2.yaml"]
    assert ok(node.run_python(QUERY)).splitlines()[1:3] == ["1, 34, 120.00 W", "2, 60, 120.00 W"]


def test_a_lost_gpu_has_no_handle_to_reset_through_either_nvidia_smi(node):
    """nvidia-smi needs the GPU's handle before it resets it; a lost GPU has none.
    ``ctl reset`` brings it back."""
    ok(ctl(node, "set", "1", "lost=true"))
    for run in (node.run, node.run_python):
        done = run(["-r", "-i", "1"])
        assert (done.returncode, done.stdout) == (
            15, "Unable to determine the device handle for GPU1: GPU is lost.  Reboot the system to recover "
                "this GPU\n\n\n")
    ok(ctl(node, "reset", "1"))
    assert ok(node.run(QUERY)).splitlines()[1] == "1, 34, 120.00 W"


def test_resets_racing_ctl_writers_keep_every_document_whole(node):
    writers = [subprocess.Popen([sys.executable, "-m", "mokka", "ctl", "set", "2", f"temperature={40 + i}"],
                                env=node.env(MOCK_NVML_CONFIG=node.config), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE) for i in range(8)]
    resets = [subprocess.Popen([node.nvidia_smi, "-r", "-i", "1"], env=node.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(4)]
    ok(ctl(node, "set", "1", "temperature=70"))
    for p in writers + resets:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    with open(os.path.join(node.overlay.driver_config, "overrides", "gpu2.yaml")) as f:
        assert 40 <= yaml.safe_load(f)["thermal"]["temperature_gpu_c"] <= 47
    assert ok(node.run(QUERY)).splitlines()[2] in {f"2, {t}, 120.00 W" for t in range(40, 48)}
