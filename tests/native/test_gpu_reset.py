"""NVIDIA's own ``nvidia-smi -r`` / ``--gpu-reset`` (550) over the mock library on a
staged node: it clears the GPUs' ``mokka ctl`` overrides as our Python
``nvidia-smi -r`` does, leaves the others, and writes the pair (overrides.yaml and
its companion) that Python's reset would have written; a file it cannot edit is
refused with one line and left as it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
import yaml

from mokka.core import flatstate
from mokka.core import profile as prof
from mokka.smi import overrides as ovr
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


def paths(node) -> tuple[str, str]:
    yaml_path = os.path.join(node.overlay.driver_config, "overrides.yaml")
    return yaml_path, flatstate.companion_path(yaml_path)


def files(node) -> tuple[bytes, bytes]:
    out = []
    for path in paths(node):
        with open(path, "rb") as f:
            out.append(f.read())
    return out[0], out[1]


def assert_pair_is_pythons(node) -> str:
    """The companion is exactly what Python writes for the YAML beside it; the YAML's text."""
    text, companion = files(node)
    assert companion == flatstate.overrides_companion(yaml.safe_load(text), text)
    assert companion.splitlines()[1] == b"digest sha256:" + hashlib.sha256(text).hexdigest().encode()
    return text.decode()


def test_reset_clears_that_gpu_only_and_prints_nvidias_success(node):
    ok(ctl(node, "set", "0", "temperature=90"))
    ok(ctl(node, "set", "1", "temperature=90", "power=300"))
    done = node.run(["-r", "-i", "1"])
    assert (done.returncode, done.stdout) == (0, SUCCESS_1), done.stderr
    # What Python's reset would have written: PyYAML's block style, GPU 0's bucket alone.
    assert assert_pair_is_pythons(node) == "version: 1\ndevices:\n  '0':\n    thermal:\n      temperature_gpu_c: 90\n"
    for run in (node.run, node.run_python):
        rows = ok(run(QUERY)).splitlines()
        assert rows[:3] == ["0, 90, 120.00 W", "1, 34, 120.00 W", "2, 34, 120.00 W"]   # GPU 1: the profile's


def test_the_long_option_and_a_last_bucket_leave_an_empty_mapping(node):
    ok(ctl(node, "set", "1", "temperature=90"))
    done = node.run(["--gpu-reset", "-i", "1"])
    assert (done.returncode, done.stdout) == (0, SUCCESS_1), done.stderr
    assert assert_pair_is_pythons(node) == "version: 1\ndevices: {}\n"
    assert ok(node.run(QUERY)).splitlines()[1] == "1, 34, 120.00 W"


def test_reset_of_every_gpu_keeps_the_overrides_for_all(node):
    yaml_path, _ = paths(node)
    ovr.write_text(yaml_path, b"version: 1\nall:\n  power:\n    current_draw_mw: 250000\n"
                              b"devices:\n  '3':\n    thermal:\n      temperature_gpu_c: 77\n"
                              b"  '5':\n    thermal:\n      temperature_gpu_c: 78\n")
    done = node.run(["-r"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("was successfully reset.") == 8 and done.stdout.endswith("All done.\n")
    assert assert_pair_is_pythons(node) == "version: 1\nall:\n  power:\n    current_draw_mw: 250000\ndevices: {}\n"
    assert ok(node.run(QUERY)).splitlines()[3] == "3, 34, 250.00 W"


def test_a_hand_written_block_file_with_comments_and_plain_keys(node):
    yaml_path, _ = paths(node)
    ovr.write_text(yaml_path, b"# written by hand\nversion: 1\ndevices:\n  1:   # the hot one\n"
                              b"    thermal: {temperature_gpu_c: 95}\n\n  \"10\":\n    power: {current_draw_mw: 1}\n"
                              b"  2:\n    thermal:\n      temperature_gpu_c: 60\n")
    ok(node.run(["-r", "-i", "1"]))
    text = assert_pair_is_pythons(node)
    assert yaml.safe_load(text) == {"version": 1, "devices": {"10": {"power": {"current_draw_mw": 1}},
                                                              2: {"thermal": {"temperature_gpu_c": 60}}}}
    assert ok(node.run_python(QUERY)).splitlines()[1:3] == ["1, 34, 120.00 W", "2, 60, 120.00 W"]


@pytest.mark.parametrize("text, why", [
    (b'{version: 1, devices: {"1": {thermal: {temperature_gpu_c: 90}}}}\n',
     "its devices are not where a block-style editor finds them"),
    (b'version: 1\ndevices: {"1": {thermal: {temperature_gpu_c: 90}}}\n', "its devices are not in block style"),
    (b"version: 1\ndevices:\n  '1': &hot\n    thermal: {temperature_gpu_c: 90}\n  '2': *hot\n",
     "the GPU's entry defines an anchor"),
], ids=["flow document", "flow devices", "anchor in the entry"])
def test_a_file_the_editor_cannot_follow_is_refused_and_left_as_it_was(node, text, why):
    yaml_path, _ = paths(node)
    ovr.write_text(yaml_path, text)
    before = files(node)
    done = node.run(["-r", "-i", "1"])
    assert (done.returncode, done.stdout.strip()) == (3, "GPU reset unavailable: Not Supported")
    assert done.stderr == (f"mock NVML: cannot reset GPU 1: {yaml_path} is not as Mokka writes it ({why}); "
                           "clear it with 'nvml-mock-ctl reset' or by hand\n")
    assert files(node) == before
    assert ok(node.run(QUERY)).splitlines()[1] == "1, 90, 120.00 W"


def test_a_lost_gpu_has_no_handle_to_reset_through_nvidias_binary(node):
    """NVIDIA's nvidia-smi needs the GPU's handle before it resets it; a lost GPU has none.
    Our Python nvidia-smi -r, or ctl reset, brings it back."""
    ok(ctl(node, "set", "1", "lost=true"))
    done = node.run(["-r", "-i", "1"])
    assert done.returncode == 15 and "GPU is lost" in done.stdout + done.stderr
    assert ok(node.run_python(["-r", "-i", "1"])) == SUCCESS_1
    assert ok(node.run(QUERY)).splitlines()[1] == "1, 34, 120.00 W"


def test_resets_racing_ctl_writers_keep_the_pair_whole(node):
    writers = [subprocess.Popen([sys.executable, "-m", "mokka", "ctl", "set", "2", f"temperature={40 + i}"],
                                env=node.env(MOCK_NVML_CONFIG=node.config), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE) for i in range(8)]
    resets = [subprocess.Popen([node.nvidia_smi, "-r", "-i", "1"], env=node.env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(4)]
    ok(ctl(node, "set", "1", "temperature=70"))
    for p in writers + resets:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    doc = yaml.safe_load(assert_pair_is_pythons(node))
    assert 40 <= doc["devices"]["2"]["thermal"]["temperature_gpu_c"] <= 47
