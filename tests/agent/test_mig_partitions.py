"""The mig simulator over a stand-in NVML library the test controls (migstandin.py):
what each MIG device NVML reports gets staged, and it follows the partitions.

The walk is the product's: a child process loading the library through ctypes
(mokka.agent.migdevices). Capability minors are the driver's (facts §4), pinned as
literals: gpu<m>/gi<g> is 3 + 135 m + 9 g, its ci<c> that + 1 + c.
"""

from __future__ import annotations

import os
import stat
import threading

import pytest
import yaml

from mokka.agent import desired as ds
from mokka.agent import migdevices
from mokka.agent.hostfs import HostFS
from mokka.agent.manifest import MANIFEST_FILE, Manifest
from mokka.agent.native import NativeFiles
from mokka.agent.simulators import Host
from mokka.agent.simulators.mig import Mig
from mokka.core import names
from mokka.core import profile as prof
from mokka.core.overlay import host_overlay

import migstandin
from helpers import wait_until
from treelist import diff, listing

U = ["MIG-11111111-1111-1111-1111-111111111111", "MIG-22222222-2222-2222-2222-222222222222",
     "MIG-33333333-3333-3333-3333-333333333333"]


class Log:
    def __init__(self):
        self.lines: list[tuple[str, dict]] = []

    def _say(self, message, **fields):
        self.lines.append((message, fields))

    info = warning = error = debug = _say


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> str:
    directory = str(tmp_path_factory.mktemp("standin"))
    migstandin.build(directory)
    return directory


@pytest.fixture
def node(tmp_path, standin):
    root = tmp_path / "host"
    (root / "var/run/cdi").mkdir(parents=True)
    overlay = host_overlay(str(root))
    log = Log()
    host = Host(root=str(root), overlay=overlay, fs=HostFS(Manifest(os.path.join(overlay.root, MANIFEST_FILE), log), log),
                cdi_dir=str(root / "var/run/cdi"), log=log, native=NativeFiles(nvml_library=b"\x7fELF"))
    os.makedirs(overlay.driver_config)
    before = listing(str(root))
    sim = Mig(host, library=os.path.join(standin, migstandin.LIBRARY), resync_s=600)
    yield sim, host, before
    sim.discard()


def desired(layout: str = "all-balanced") -> ds.Desired:
    path, text = prof.read("h100")
    return ds.build(1, "h100", path, ds.with_num_devices(text, 2), mig_layout=layout)


def spec(host: Host) -> dict | None:
    path = os.path.join(host.cdi_dir, names.CDI_SPEC_MIG_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return yaml.safe_load(f)


def cdi_nodes(host: Host) -> dict[str, list[tuple]]:
    return {d["name"]: [(n["path"], n["hostPath"], n["major"], n["minor"]) for n in d["containerEdits"]["deviceNodes"]]
            for d in (spec(host) or {"devices": []})["devices"]}


def access(host: Host, rel: str) -> tuple[str, int]:
    path = os.path.join(host.overlay.proc, "capabilities", rel, "access")
    with open(path) as f:
        return f.read(), stat.S_IMODE(os.lstat(path).st_mode)


def cap(host: Host, minor: int) -> tuple[int, int, int]:
    st = os.lstat(os.path.join(host.overlay.dev, "nvidia-caps", f"nvidia-cap{minor}"))
    assert stat.S_ISCHR(st.st_mode)
    return os.major(st.st_rdev), os.minor(st.st_rdev), stat.S_IMODE(st.st_mode)


TWO_GPUS = [(0, 1, 7), (1, 1, 7)]
THREE_DEVICES = [(0, 0, U[0], 1, 0), (0, 1, U[1], 2, 0), (1, 0, U[2], 7, 0)]


def test_each_mig_device_gets_its_capabilities_and_its_cdi_names(node, standin):
    sim, host, _ = node
    migstandin.write(standin, TWO_GPUS, THREE_DEVICES)
    sim.stage(desired())
    sim.apply(desired())
    assert access(host, "gpu0/mig/gi1") == ("DeviceFileMinor: 12\nDeviceFileMode: 292\nDeviceFileModify: 1\n", 0o444)
    assert access(host, "gpu0/mig/gi1/ci0") == ("DeviceFileMinor: 13\nDeviceFileMode: 292\nDeviceFileModify: 1\n", 0o444)
    assert access(host, "gpu0/mig/gi2/ci0")[0].startswith("DeviceFileMinor: 22\n")
    assert access(host, "gpu1/mig/gi7")[0].startswith("DeviceFileMinor: 201\n")
    assert [cap(host, m) for m in (12, 13, 21, 22, 201, 202)] == [(236, m, 0o444) for m in (12, 13, 21, 22, 201, 202)]
    dev = host.overlay.dev

    def nodes(gpu: int, *caps: int) -> list[tuple]:
        return [(f"/dev/nvidia{gpu}", f"{dev}/nvidia{gpu}", 195, gpu)] + [
            (f"/dev/nvidia-caps/nvidia-cap{c}", f"{dev}/nvidia-caps/nvidia-cap{c}", 236, c) for c in caps]

    assert cdi_nodes(host) == {"0:0": nodes(0, 12, 13), U[0]: nodes(0, 12, 13),
                               "0:1": nodes(0, 21, 22), U[1]: nodes(0, 21, 22),
                               "1:0": nodes(1, 201, 202), U[2]: nodes(1, 201, 202)}
    whole = spec(host)
    assert whole["kind"] == "nvidia.com/gpu"
    assert {n["path"] for n in whole["containerEdits"]["deviceNodes"]} == {
        "/dev/nvidiactl", "/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}


def test_only_what_nvml_hands_out_is_rendered(node, standin):
    sim, host, _ = node
    gpus = [(0, 0, 7), (1, -1, 0), (2, 1, 7), (40, 1, 7)]
    migs = [(0, 0, U[0], 1, 0), (2, 1, U[1], 3, 1), (3, 0, U[2], 1, 0)]
    errors = [(2, 0, 6), (2, 2, 2)]        # NOT_FOUND and INVALID_ARGUMENT: skipped, as go-nvlib does
    migstandin.write(standin, gpus, migs, errors)
    sim.stage(desired())
    sim.apply(desired())
    # GPU 0 has MIG off, GPU 1 is not MIG-capable, GPU 3's minor 40 has no capability numbers.
    assert sorted(cdi_nodes(host)) == ["2:1", U[1]]
    assert [n[3] for n in cdi_nodes(host)["2:1"]] == [2, 3 + 270 + 27, 3 + 270 + 27 + 2]
    assert not os.path.exists(os.path.join(host.overlay.proc, "capabilities", "gpu40"))


def test_the_tree_follows_the_partition_state_the_library_rewrites(node, standin):
    sim, host, _ = node
    migstandin.write(standin, TWO_GPUS, THREE_DEVICES[:1])
    sim.stage(desired())
    sim.apply(desired())
    sim.run(desired(), threading.Event())
    with sim._mu:                 # no walk in flight: the next one counted is one the rename caused
        walks = sim.walks
    state = host.overlay.mig_state

    def rewrite(migs):
        migstandin.write(standin, TWO_GPUS, migs)
        with open(state + ".tmp", "w") as f:          # as the library writes it: a rename
            f.write("partition state\n")
        os.replace(state + ".tmp", state)

    gpu0 = os.path.join(host.overlay.proc, "capabilities", "gpu0")
    rewrite(THREE_DEVICES)
    wait_until(lambda: len(sim.devices) == 3, what="the new MIG device rendered")
    assert U[2] in cdi_nodes(host)
    assert cap(host, 201) == (236, 201, 0o444) and sim.walks > walks
    rewrite(THREE_DEVICES[2:])
    wait_until(lambda: len(sim.devices) == 1, what="the destroyed devices gone")
    assert sorted(cdi_nodes(host)) == ["1:0", U[2]]
    assert not os.path.exists(gpu0)
    assert not os.path.exists(os.path.join(host.overlay.dev, "nvidia-caps", "nvidia-cap12"))
    rewrite([])
    wait_until(lambda: not sim.devices, what="the last device gone")
    assert spec(host) is None
    walked = sim.walks
    with open(os.path.join(host.overlay.driver_config, "unrelated"), "w") as f:
        f.write("x")
    rewrite([])                                           # control: the state file counts
    wait_until(lambda: sim.walks > walked, what="a walk after the state file changed")


@pytest.mark.parametrize("fault", ["an unknown NVML error", "a crashing library"])
def test_a_failing_walk_keeps_the_last_tree_and_says_so_once(node, standin, fault):
    sim, host, _ = node
    migstandin.write(standin, TWO_GPUS, THREE_DEVICES)
    sim.stage(desired())
    sim.apply(desired())
    before = cdi_nodes(host)
    if fault == "a crashing library":
        migstandin.write(standin, TWO_GPUS, [], crash=True)
    else:
        migstandin.write(standin, TWO_GPUS, [], errors=[(0, 0, 999)])
    sim.apply(desired())
    sim.apply(desired())
    assert cdi_nodes(host) == before
    said = [fields for message, fields in host.log.lines if message.startswith("cannot read the MIG devices")]
    assert len(said) == 1, said
    migstandin.write(standin, TWO_GPUS, [])               # control: a good walk renders again
    sim.apply(desired())
    assert spec(host) is None


def test_the_boot_and_a_new_mig_declaration_drop_the_partition_and_drain_states(node):
    sim, host, _ = node
    config = host.overlay.driver_config
    for name in ("mig.nvml", ".mig.nvml.lock", "mig.nvml.1234.tmp", "settings.nvml",   # drained GPUs too
                 ".settings.nvml.77.1.tmp", "overrides-keep"):
        with open(os.path.join(config, name), "w") as f:
            f.write("x")
    sim.stage(desired())
    assert sorted(os.listdir(config)) == ["overrides-keep"]
    with open(host.overlay.mig_state, "w") as f:
        f.write("made after boot")
    sim.stage(desired())                                 # the same GPUs: the partitions stay
    assert os.path.exists(host.overlay.mig_state)
    sim.stage(desired("all-7g.80gb"))                    # another layout: they go
    assert not os.path.exists(host.overlay.mig_state)


def test_revoke_withdraws_the_spec_and_discard_leaves_the_host_as_found(node, standin):
    sim, host, before = node
    migstandin.write(standin, TWO_GPUS, THREE_DEVICES)
    sim.stage(desired())
    sim.apply(desired())
    sim.run(desired(), threading.Event())
    with open(host.overlay.mig_state, "w") as f:
        f.write("partitions")
    with open(os.path.join(host.overlay.driver_config, "settings.nvml"), "w") as f:
        f.write("power limits")
    sim.revoke()
    assert spec(host) is None and cap(host, 12) == (236, 12, 0o444)
    sim.discard()
    assert not sim.host.fs.manifest.paths("mig") and not sim.host.fs.manifest.paths("mig:partitions")
    after = [line for line in listing(host.root) if MANIFEST_FILE not in line]
    assert after == before, diff(before, after)


MALFORMED = [
    ("not JSON", b"MIG devices: none"),
    ("not a list", b'{"devices": []}'),
    ("a row of the wrong length", b'[[0, 0, 0, "MIG-1", 1]]'),
    ("a negative number", b'[[0, -1, 0, "MIG-1", 1, 0]]'),
    ("a boolean for a number", b'[[0, true, 0, "MIG-1", 1, 0]]'),
    ("a UUID that is not a MIG UUID", b'[[0, 0, 0, "GPU-1", 1, 0]]'),
    ("a UUID with a path in it", b'[[0, 0, 0, "MIG-1/../../etc", 1, 0]]'),
    ("a UUID with a newline", b'[[0, 0, 0, "MIG-1\\nx", 1, 0]]'),
    ("too long a UUID", b'[[0, 0, 0, "MIG-' + b"1" * 200 + b'", 1, 0]]'),
    ("too many devices", b"[" + b",".join([b'[0, 0, 0, "MIG-1", 1, 0]'] * 8000) + b"]"),
]


@pytest.mark.parametrize("output", [c[1] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_the_walks_output_is_checked_before_it_is_used(output):
    with pytest.raises(migdevices.ReadError):
        migdevices.parse(output)


def test_control_a_well_formed_walk_parses():
    assert migdevices.parse(b'[[0, 3, 1, "MIG-1", 2, 0]]') == [(0, 3, 1, "MIG-1", 2, 0)]
