"""NVIDIA's nvidia-smi 550 takes `-i <PCI bus id>` over the library, for every command (issue 35).

It parses the id through a private export-table slot (11) and finds the GPU by comparing each
GPU's PCI location (slot 74) with it; answering NOT_SUPPORTED there made every `-i <bus id>`
fail with "Invalid PCI bus id format" and exit 255. The long, the short-domain and the
domain-less forms name the same GPU, in either case, for a query, `-q`, `-r` and `-mig`; ours
prints what NVIDIA's prints.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from mokka.core import names
from mokka.core import profile as prof
from tests.native.staged import nvml_build, ok, staged_node  # noqa: F401 (fixtures)

FORMS = ["00000000:1B:00.0", "0000:1b:00.0", "1B:00.0"]
WHICH = ["--query-gpu=pci.bus_id,index", "--format=csv,noheader"]


@pytest.fixture(scope="module")
def node(staged_node, tmp_path_factory):
    path = tmp_path_factory.mktemp("bus-id") / "h100-bus-id.yaml"
    path.write_bytes(prof.load("h100").text)
    node = staged_node(str(path))
    yield node
    state = os.path.join(node.overlay.driver_config, names.MIG_STATE_FILE)
    if os.path.exists(state):
        os.unlink(state)


@pytest.mark.parametrize("form", FORMS)
def test_every_form_names_the_gpu_at_that_bus_id(node, form):
    for run in (node.run, node.run_python):
        assert ok(run(WHICH + ["-i", form])) == "00000000:1B:00.0, 1\n"
        report = ok(run(["-q", "-d", "COMPUTE", "-i", form]))
        assert report.endswith("Attached GPUs                             : 8\n"
                               "GPU 00000000:1B:00.0\n    Compute Mode                          : Default\n\n")
        assert ok(run(["-r", "-i", form])) == "GPU 00000000:1B:00.0 was successfully reset.\nAll done.\n"
        assert ok(run(["-i", form, "-mig", "1"])) == "Enabled MIG Mode for GPU 00000000:1B:00.0\nAll done.\n"
        assert ok(run(["--query-gpu=mig.mode.current", "--format=csv,noheader", "-i", "1"])) \
            == "Enabled\n"
        assert ok(run(["-i", form, "-mig", "0"])) == "Disabled MIG Mode for GPU 00000000:1B:00.0\nAll done.\n"


@pytest.mark.parametrize("form", ["00000000:FF:00.0", "1:1B:00.0", "00000000:1B:00.1"])
def test_a_bus_id_no_gpu_has_finds_none(node, form):
    for run in (node.run, node.run_python):
        done = run(WHICH + ["-i", form])
        assert (done.returncode, done.stdout) == (6, "No devices were found\n")


def test_a_malformed_bus_id_is_still_refused_by_nvidias(node):
    """The positive control: the parse refuses what is not [domain:]bus:device.function."""
    done = subprocess.run([node.nvidia_smi, *WHICH, "-i", "1B:00"], capture_output=True, env=node.env(), timeout=60)
    assert done.returncode == 255
    assert done.stdout.endswith(b": Invalid PCI bus id format. Try format [domain:]bus:device.function "
                                b"E.g. 0:2:0.0\n")
