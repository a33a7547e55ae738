"""MIG in the library as pynvml and NVIDIA's nvidia-smi see it from separate processes: one
node-wide truth, MIG device queries, errors as the driver gives them, the layout a profile
boots with, and what a container with some MIG devices sees.

Every process here is its own: what one makes, the next one reads from the node's files.
Expected values are the facts' (memory, SMs, engines of the h100's profiles) as literals.
"""

from __future__ import annotations

import os
import re

from mokka.core import compile as comp, names, profile as prof
from mokka.engine import flatstate
from tests.native import mig_nodes as mn
from tests.native.mig_nodes import INVALID_ARGUMENT, IN_USE, NOT_FOUND, NOT_SUPPORTED

MIB = 1 << 20
H100 = "NVIDIA H100 80GB HBM3"
GPU0 = "GPU-01000100-0000-0000-0000-000000000000"
GPU1 = "GPU-01000100-0000-0000-0000-000000000001"
#: (name, GI id, memory MiB, attributes: SMs, CE, DEC, ENC, JPEG, OFA, GI slices, CI slices, memory MiB)
H100_DEVICES = [
    (f"{H100} MIG 3g.40gb", 1, 40448, [60, 3, 3, 0, 3, 0, 3, 3, 40448]),
    (f"{H100} MIG 2g.20gb", 5, 20096, [32, 2, 2, 0, 2, 0, 2, 2, 20096]),
    (f"{H100} MIG 1g.10gb", 13, 9984, [16, 1, 1, 0, 1, 0, 1, 1, 9984]),
]


def uuids_listed(text: str) -> list:
    return re.findall(r"\(UUID: (MIG-[^)]+)\)", text)


def test_what_nvidias_nvidia_smi_makes_pynvml_sees_in_another_process(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    mn.enable(nvml_lib, env)
    assert mn.nvidia_smi(nvml_lib, env, "mig", "-cgi", "19,14,9", "-C", "-i", "0").returncode == 0
    listed = uuids_listed(mn.nvidia_smi(nvml_lib, env, "-L").stdout)
    gpu = mn.probe(nvml_lib, env, "state")["gpus"][0]
    assert gpu["mode"] == [1, 1]
    assert gpu["gpu_instances"] == [
        {"id": 1, "profile": 9, "placement": [0, 4], "cis": [[0, 2, 0, 3]]},
        {"id": 5, "profile": 14, "placement": [4, 2], "cis": [[0, 1, 0, 2]]},
        {"id": 13, "profile": 19, "placement": [6, 1], "cis": [[0, 0, 0, 1]]}]
    devices = gpu["devices"]
    assert [(d["name"], d["gi"], d["ci"], d["memory"][0] // MIB, d["attributes"]) for d in devices] == [
        (name, gi, 0, mib, attrs) for name, gi, mib, attrs in H100_DEVICES]
    assert [d["uuid"] for d in devices] == listed and len(set(listed)) == 3
    for d in devices:
        assert d["by_uuid"] == d["uuid"] and d["parent"] == GPU0 and d["is_mig"] == 1
        assert d["bus_id"] == "00000000:1A:00.0" and d["memory"][1:] == [d["memory"][0], 0]
        assert d["temperature"] == ["err", NOT_SUPPORTED]        # a whole GPU's reading
    assert mn.probe(nvml_lib, env, "state")["gpus"][1] == {"uuid": GPU1, "mode": [0, 0], "devices": []}


def test_what_pynvml_makes_nvidias_nvidia_smi_lists(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    mn.enable(nvml_lib, env, "0,1")
    assert mn.probe(nvml_lib, env, "create", "1", "5") == {"gi": 1, "ci": 0}
    done = mn.nvidia_smi(nvml_lib, env, "mig", "-lci")
    assert done.returncode == 0
    assert re.search(r"\|\s+1\s+1\s+MIG 4g.40gb\s+3\s+0\s+0:4\s+\|", done.stdout), done.stdout
    assert mn.probe(nvml_lib, env, "create", "1", "5") == {"gi": ["err", mn.INSUFFICIENT_RESOURCES]}


def test_errors_are_the_drivers(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    mn.enable(nvml_lib, env)
    assert mn.probe(nvml_lib, env, "errors", "0") == {
        "profile index past NVML's": INVALID_ARGUMENT, "unknown profile ID": INVALID_ARGUMENT,
        "destroy a GPU instance with a compute instance": IN_USE, "disable MIG with instances": IN_USE,
        "a GPU-only query of a MIG device": NOT_SUPPORTED, "the destroyed MIG device's handle": INVALID_ARGUMENT,
        "destroy the GPU instance": 0, "the destroyed GPU instance's handle": INVALID_ARGUMENT,
        "a placement the profile does not have": INVALID_ARGUMENT}


def test_a_board_without_a_mig_table_does_not_support_mig(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "l40s")
    assert mn.probe(nvml_lib, env, "state")["gpus"][0]["mode"] == ["err", NOT_SUPPORTED]
    done = mn.nvidia_smi(nvml_lib, env, "-i", "0", "-mig", "1")
    assert (done.returncode, done.stdout) == (0, "Unable to enable MIG Mode for GPU 00000000:17:00.0: Not Supported\n"
                                                 "Treating as warning and moving on.\nAll done.\n")
    done = mn.nvidia_smi(nvml_lib, env, "mig", "-lgi")
    assert (done.returncode, done.stdout) == (NOT_FOUND, "No MIG-supported devices found.\n")


def test_a_gpu_naming_a_partition_table_the_state_lacks_does_not_support_mig(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    config = env[names.ENV_NVML_CONFIG]
    state = comp.compile_profile(prof.load(config))
    assert len(state["mig_tables"]) == 1
    state["gpus"][0]["mig"]["table"] = 1            # past the one table
    state["gpus"][1]["mig"]["table"] = 64           # past the most a node can have
    state["gpus"][2]["mig"]["table"] = "first"
    with open(flatstate.companion_path(config), "wb") as f:
        f.write(flatstate.state_companion(state))
    modes = [gpu["mode"] for gpu in mn.probe(nvml_lib, env, "state")["gpus"]]
    assert modes == [["err", NOT_SUPPORTED]] * 3 + [[0, 0]] * 5


def test_a_board_booting_with_mig_on_has_its_layout_from_the_first_nvml_init(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100", mig="enabled", layout=["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])
    gpus = mn.probe(nvml_lib, env, "state")["gpus"]
    assert len(gpus) == 8
    for gpu in gpus:                              # every GPU, each instance with its default CI
        assert gpu["mode"] == [1, 1]
        assert sorted((gi["profile"], len(gi["cis"])) for gi in gpu["gpu_instances"]) == [
            (9, 1), (14, 1), (19, 1), (19, 1)]
        assert len(gpu["devices"]) == 4
    assert not os.path.exists(mn.state_file(env))                  # reading writes nothing
    assert mn.probe(nvml_lib, env, "create", "0", "19") == {"gi": ["err", mn.INSUFFICIENT_RESOURCES]}
    done = mn.nvidia_smi(nvml_lib, env, "mig", "-dci", "-i", "0")
    assert done.returncode == 0 and done.stdout.count("Successfully destroyed") == 4
    after = mn.probe(nvml_lib, env, "state")["gpus"]
    assert [len(g["devices"]) for g in after] == [0, 4, 4, 4, 4, 4, 4, 4]


def test_a_container_sees_the_mig_devices_whose_capability_nodes_it_has(nvml_lib, tmp_path):
    """gpu0/gi<g>/access is nvidia-cap<3 + 9g>, its ci<c> that + 1 + c (mig-minors): a container
    given GPU instance 1's compute instance 0 has /dev/nvidia0, nvidia-cap12 and nvidia-cap13."""
    host = mn.board(str(tmp_path / "host"), "h100")
    mn.enable(nvml_lib, host)
    assert mn.nvidia_smi(nvml_lib, host, "mig", "-cgi", "9,9", "-C", "-i", "0").returncode == 0
    host_uuids = [d["uuid"] for d in mn.probe(nvml_lib, host, "state")["gpus"][0]["devices"]]
    assert len(host_uuids) == 2
    for caps, seen in (((12, 13), host_uuids[:1]), ((21, 22), host_uuids[1:]), ((12, 22), []),
                       ((12, 13, 2), host_uuids)):                  # the monitor node: every one
        container = dict(host, **{names.ENV_DEV_ROOT: _dev_root(tmp_path, caps)})
        gpus = mn.probe(nvml_lib, container, "state")["gpus"]
        assert [g["uuid"] for g in gpus] == [GPU0]
        assert [d["uuid"] for d in gpus[0]["devices"]] == seen, caps
        listed = uuids_listed(mn.nvidia_smi(nvml_lib, container, "-L").stdout)
        assert listed == seen


def _dev_root(tmp_path, caps: tuple) -> str:
    root = tmp_path / ("dev-" + "-".join(map(str, caps)))
    caps_dir = root / "dev" / names.NVIDIA_CAPS_DEV_NAME
    caps_dir.mkdir(parents=True)
    (root / "dev" / names.gpu_node_name(0)).touch()
    for minor in caps:
        (caps_dir / f"{names.NVIDIA_CAP_PREFIX}{minor}").touch()
    return str(root)


def test_visible_devices_take_mig_uuids(nvml_lib, tmp_path):
    env = mn.board(str(tmp_path), "h100")
    mn.enable(nvml_lib, env, "0,3")
    for gpu in ("0", "3"):
        assert mn.nvidia_smi(nvml_lib, env, "mig", "-cgi", "14,14", "-C", "-i", gpu).returncode == 0
    gpus = mn.probe(nvml_lib, env, "state")["gpus"]
    wanted = [gpus[0]["devices"][1]["uuid"], gpus[3]["devices"][0]["uuid"]]
    seen = mn.probe(nvml_lib, dict(env, **{names.ENV_NVML_VISIBLE_DEVICES: ",".join(wanted)}), "state")["gpus"]
    assert [g["uuid"] for g in seen] == [GPU0, "GPU-01000100-0000-0000-0000-000000000003"]
    assert [[d["uuid"] for d in g["devices"]] for g in seen] == [wanted[:1], wanted[1:]]
    assert [d["index"] for g in seen for d in g["devices"]] == [0, 0]   # renumbered, as CUDA sees them
