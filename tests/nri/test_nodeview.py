"""The node view: staged host facts for the decision, cached by directory signatures.

Runs against a real tree in a temp dir; device nodes are made with mknod, so
the tests that need them skip on a host without CAP_MKNOD.
"""

from __future__ import annotations

import os
import stat
import time

import pytest
import yaml

from mokka.core import names
from mokka.core.overlay import Overlay, container_overlay
from mokka.nri import nodeview
from mokka.nri.inject import Config, Device, Mount
from mokka.nri.nodeview import NodeViewBuilder

FUTURE = lambda: time.time_ns() + 3_600 * 10**9     # noqa: E731 - every signature is old news
MOUNT = container_overlay(names.OVERLAY_MOUNT_PATH)
IMEX_DIR = "/dev/nvidia-caps-imex-channels"


def mknod(path, major, minor, mode=0o666):
    try:
        os.mknod(path, stat.S_IFCHR | mode, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("needs CAP_MKNOD to create character devices")
    os.chmod(path, mode)


@pytest.fixture
def host(tmp_path):
    overlay = Overlay(str(tmp_path / "overlay"))
    os.makedirs(overlay.dev)
    return overlay


def builder(host: Overlay, tmp_path, **kwargs) -> NodeViewBuilder:
    kwargs.setdefault("cdi_spec_host_path", str(tmp_path / "cdi" / names.CDI_SPEC_MOCK_FILE))
    kwargs.setdefault("clock_ns", FUTURE)
    return NodeViewBuilder(overlay_host_path=host.root, **kwargs)


def test_gpu_nodes_are_char_devices_only_in_natural_order(host, tmp_path):
    for i in (0, 1, 2, 10):
        mknod(host.gpu_node(i), names.NVIDIA_MAJOR, i)
    mknod(host.control_node("nvidiactl"), names.NVIDIA_MAJOR, names.NVIDIACTL_MINOR)
    mknod(host.control_node("nvidia-uvm"), names.UVM_MAJOR, names.UVM_MINOR)
    open(host.gpu_node(3), "w").close()                  # unprivileged agent's placeholder
    os.symlink(host.gpu_node(0), host.gpu_node(4))       # a link is not a node
    os.makedirs(host.imex_channels)                      # the channel directory
    mknod(os.path.join(host.dev, "fuse"), 10, 229)       # not ours
    view = builder(host, tmp_path).build()
    assert [d.path for d in view.dev_nodes] == [
        "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia10", "/dev/nvidia-uvm", "/dev/nvidiactl"]
    assert view.dev_nodes[3] == Device("/dev/nvidia10", "c", names.NVIDIA_MAJOR, 10, 0o666, 0, 0)
    assert view.dev_nodes[4].major == names.UVM_MAJOR


def test_missing_trees_give_an_empty_view(tmp_path):
    view = NodeViewBuilder(overlay_host_path=str(tmp_path / "nothing"),
                           cdi_spec_host_path=str(tmp_path / "no-cdi" / "spec.yaml")).build()
    assert view.dev_nodes == () and view.imex_channels == () and view.hca_count == 0
    assert not view.cdi_spec_staged and dict(view.cdi_edits) == {}
    assert view.staged_shims == frozenset() and not view.topology_staged


def test_explicit_device_host_path(host, tmp_path):
    other = tmp_path / "devs"
    other.mkdir()
    mknod(str(other / "nvidia7"), names.NVIDIA_MAJOR, 7)
    view = builder(host, tmp_path, device_host_path=str(other)).build()
    assert [d.path for d in view.dev_nodes] == ["/dev/nvidia7"]


class Counting:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(*args, **kwargs)


def test_imex_channels_are_listed_once_per_directory_change(host, tmp_path, monkeypatch):
    os.makedirs(host.imex_channels)
    count = 2048
    for i in range(count):
        mknod(host.imex_channel(i), names.IMEX_CHANNEL_MAJOR, i)
    lstat = Counting(os.lstat)
    monkeypatch.setattr(nodeview, "_lstat", lstat)
    b = builder(host, tmp_path)
    first = b.build()
    assert len(first.imex_channels) == count
    assert first.imex_channels[2] == Device(f"{IMEX_DIR}/channel2", "c", names.IMEX_CHANNEL_MAJOR, 2, 0o666, 0, 0)
    assert first.imex_channels[-1].path == f"{IMEX_DIR}/channel{count - 1}"   # numeric, not lexical, order
    assert lstat.calls >= count

    lstat.calls = 0
    listdir = Counting(os.listdir)
    monkeypatch.setattr(os, "listdir", listdir)
    second = b.build()
    assert second is first                    # nothing changed: the same view
    assert lstat.calls == 0 and listdir.calls == 0

    mknod(host.imex_channel(count), names.IMEX_CHANNEL_MAJOR, count)
    third = b.build()
    assert len(third.imex_channels) == count + 1
    assert third.dev_nodes is first.dev_nodes  # only the changed directory was rescanned


def test_a_racily_recent_directory_is_not_trusted(host, tmp_path, monkeypatch):
    # With a real clock the just-made directory is within the racy window, so
    # a change in the same timestamp tick cannot be missed: it rescans.
    mknod(host.gpu_node(0), names.NVIDIA_MAJOR, 0)
    b = builder(host, tmp_path, clock_ns=time.time_ns)
    b.build()
    lstat = Counting(os.lstat)
    monkeypatch.setattr(nodeview, "_lstat", lstat)
    b.build()
    assert lstat.calls >= 1
    # Control: once the directory is old news, the scan is cached.
    b = builder(host, tmp_path)
    b.build()
    lstat.calls = 0
    b.build()
    assert lstat.calls == 0


def write_spec(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        yaml.safe_dump(doc, handle)
    os.replace(tmp, path)


def mock_spec(host: Overlay, gpus: int) -> dict:
    return {
        "cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MOCK,
        "containerEdits": {"env": [f"{names.ENV_CDI_DEVICE_SOURCE}=cdi"]},
        "devices": [{"name": str(i), "containerEdits": {"deviceNodes": [
            {"path": f"/dev/nvidia{i}", "hostPath": host.gpu_node(i)}]}} for i in range(gpus)]
        + [{"name": names.CDI_DEVICE_ALL, "containerEdits": {"deviceNodes": [
            {"path": f"/dev/nvidia{i}", "hostPath": host.gpu_node(i)} for i in range(gpus)]}}],
    }


def test_cdi_spec_presence_and_edits(host, tmp_path):
    for i in range(2):
        mknod(host.gpu_node(i), names.NVIDIA_MAJOR, i)
    spec = tmp_path / "cdi" / names.CDI_SPEC_MOCK_FILE
    b = builder(host, tmp_path)
    assert not b.build().cdi_spec_staged

    write_spec(str(spec), mock_spec(host, 2))
    write_spec(str(tmp_path / "cdi" / names.CDI_SPEC_MANAGEMENT_FILE), {
        "cdiVersion": names.CDI_VERSION, "kind": names.CDI_KIND_MANAGEMENT,
        "devices": [{"name": "all", "containerEdits": {
            "deviceNodes": [{"path": "/dev/nvidiactl", "type": "c", "major": 195, "minor": 255},
                            {"path": "/dev/placeholder", "hostPath": str(tmp_path / "regular")},
                            {"path": "/dev/gone", "hostPath": str(tmp_path / "missing")}],
            "mounts": [{"hostPath": "/h/nvidia-smi", "containerPath": "/usr/bin/nvidia-smi",
                        "options": ["ro", "bind"]}]}}]})
    (tmp_path / "regular").write_text("")
    (tmp_path / "cdi" / "broken.yaml").write_text("kind: [unclosed\n")
    (tmp_path / "cdi" / "README").write_text("not a spec")

    view = b.build()
    assert view.cdi_spec_staged
    common, own = view.cdi_edits[names.CDI_MOCK_DEVICE_ALL]
    assert common.env == (f"{names.ENV_CDI_DEVICE_SOURCE}=cdi",)
    # Numbers completed from the host node, as the runtime would.
    assert own.devices == tuple(Device(f"/dev/nvidia{i}", "c", names.NVIDIA_MAJOR, i, 0o666)
                                for i in range(2))
    assert set(view.cdi_edits) == {f"{names.CDI_KIND_MOCK}={n}" for n in ("0", "1", "all")} | {
        f"{names.CDI_KIND_MANAGEMENT}=all"}
    (management,) = view.cdi_edits[f"{names.CDI_KIND_MANAGEMENT}=all"]
    assert management.devices == (Device("/dev/nvidiactl", "c", 195, 255),)   # unresolvable nodes dropped
    assert management.mounts == (Mount("/usr/bin/nvidia-smi", "/h/nvidia-smi", "bind", ("ro", "bind")),)

    # Rewritten (atomically) with one more GPU: picked up on the next build.
    mknod(host.gpu_node(2), names.NVIDIA_MAJOR, 2)
    write_spec(str(spec), mock_spec(host, 3))
    assert len(b.build().cdi_edits[names.CDI_MOCK_DEVICE_ALL][1].devices) == 3

    # Withdrawn (the agent's Stage does this in cdi mode): no longer staged.
    os.unlink(spec)
    view = b.build()
    assert not view.cdi_spec_staged and names.CDI_MOCK_DEVICE_ALL not in view.cdi_edits


def test_staged_shims_topology_and_hcas(host, tmp_path):
    os.makedirs(host.preload_lib)
    staged = names.LD_PRELOAD_SHIMS[:2]
    for shim in staged:
        open(host.join(shim), "w").close()
    shims = names.LD_PRELOAD_SHIMS + ("/usr/lib/libimage.so", f"{names.OVERLAY_MOUNT_PATH}/extra/libx.so")
    b = builder(host, tmp_path, ld_preload_shims=shims)
    view = b.build()
    assert view.staged_shims == {MOUNT.shim(s) for s in staged} | {"/usr/lib/libimage.so"}
    assert not view.topology_staged and view.hca_count == 0

    os.makedirs(host.join("extra"))
    open(host.join("extra/libx.so"), "w").close()
    os.makedirs(os.path.dirname(host.topology))
    open(host.topology, "w").close()
    hcas = host.join(names.IB_CLASS_DIR)
    for hca in ("mlx5_0", "mlx5_1"):
        os.makedirs(os.path.join(hcas, hca))
    view = b.build()
    assert f"{names.OVERLAY_MOUNT_PATH}/extra/libx.so" in view.staged_shims
    assert view.topology_staged and view.hca_count == 2

    os.unlink(host.join(staged[0]))
    assert MOUNT.shim(staged[0]) not in b.build().staged_shims


def test_runtime_cdi_support_passes_through(host, tmp_path):
    b = builder(host, tmp_path, runtime_accepts_cdi=True)
    assert b.build().runtime_accepts_cdi
    assert not b.build(runtime_accepts_cdi=False).runtime_accepts_cdi
    assert b.build().runtime_accepts_cdi


def test_for_config_uses_the_decision_paths(host, tmp_path):
    os.makedirs(host.preload_lib)
    open(host.join(names.LD_PRELOAD_SHIMS[0]), "w").close()
    cfg = Config(overlay_host_path=host.root, overlay_mount_path="/mock")
    view = NodeViewBuilder.for_config(cfg, cdi_spec_host_path="", clock_ns=FUTURE).build()
    assert view.staged_shims == {container_overlay("/mock").shim(names.LD_PRELOAD_SHIMS[0])}


# --- Revalidation by inotify: no stat while nothing changed, every change seen ---

def hcas_of(host: Overlay) -> str:
    return host.join(names.IB_CLASS_DIR)


#: Longer than any test takes: a quiet tree stays quiet however slowly a loaded
#: machine runs the test (the revalidation has its own test).
QUIET_S = 3600.0


def quiet_builder(host, tmp_path, monkeypatch, revalidate_s: float = QUIET_S, **kwargs):
    """A builder past its first build, with stat counted from then on."""
    monkeypatch.setattr(nodeview, "REVALIDATE_S", revalidate_s)
    b = builder(host, tmp_path, **kwargs)
    b.build()
    counted = Counting(os.stat)
    monkeypatch.setattr(nodeview, "_stat", counted)
    return b, counted


def test_a_quiet_tree_costs_no_stat_and_a_change_is_seen_at_once(host, tmp_path, monkeypatch):
    os.makedirs(os.path.join(hcas_of(host), "mlx5_0"))
    b, counted = quiet_builder(host, tmp_path, monkeypatch)
    first = b.build()
    for _ in range(5):
        assert b.build() is first
    assert counted.calls == 0                       # one poll, no stat
    os.makedirs(os.path.join(hcas_of(host), "mlx5_1"))
    assert b.build().hca_count == 2                 # the very next build, no clock moved
    assert counted.calls > 0


def test_a_spec_rewritten_in_place_is_seen(host, tmp_path, monkeypatch):
    spec = tmp_path / "cdi" / names.CDI_SPEC_MOCK_FILE
    write_spec(str(spec), mock_spec(host, 0))
    b, _ = quiet_builder(host, tmp_path, monkeypatch)
    assert names.CDI_MOCK_DEVICE_ALL in b.build().cdi_edits
    with open(spec, "w") as handle:                 # not atomic: same inode, new bytes
        yaml.safe_dump({**mock_spec(host, 0), "kind": "other.example.com/gpu"}, handle)
    assert names.CDI_MOCK_DEVICE_ALL not in b.build().cdi_edits


def test_the_overlay_replaced_by_rename_is_seen(host, tmp_path, monkeypatch):
    # The watched directories move away with the old tree and raise nothing
    # themselves: the event is in their ancestors.
    os.makedirs(hcas_of(host))
    b, _ = quiet_builder(host, tmp_path, monkeypatch)
    assert b.build().hca_count == 0
    fresh = Overlay(str(tmp_path / "fresh"))
    for hca in ("mlx5_0", "mlx5_1", "mlx5_2"):
        os.makedirs(os.path.join(fresh.join(names.IB_CLASS_DIR), hca))
    os.rename(host.root, str(tmp_path / "old"))
    os.rename(fresh.root, host.root)
    assert b.build().hca_count == 3


def test_a_symlink_on_the_way_retargeted_is_seen(tmp_path, monkeypatch):
    # Debian's /var/run is a link to /run: the default CDI directory goes through one.
    for name, count in (("a", 1), ("b", 2)):
        for i in range(count):
            os.makedirs(tmp_path / name / names.IB_CLASS_DIR / f"mlx5_{i}")
    link = tmp_path / "overlay"
    os.symlink(tmp_path / "a", link)
    monkeypatch.setattr(nodeview, "REVALIDATE_S", QUIET_S)
    b = NodeViewBuilder(overlay_host_path=str(link), cdi_spec_host_path="", clock_ns=FUTURE)
    assert b.build().hca_count == 1
    counted = Counting(os.stat)
    monkeypatch.setattr(nodeview, "_stat", counted)
    b.build()
    assert counted.calls == 0                       # a link on the way is watched, not refused
    os.symlink(tmp_path / "b", tmp_path / "next")
    os.replace(tmp_path / "next", link)             # retargeted atomically
    assert b.build().hca_count == 2
    os.makedirs(tmp_path / "b" / names.IB_CLASS_DIR / "mlx5_2")   # the new target is watched
    assert b.build().hca_count == 3


def test_a_spec_file_that_is_a_symlink_keeps_the_stat_pass(host, tmp_path, monkeypatch):
    # Its target can change with no event in the spec directory.
    real = tmp_path / "elsewhere" / "spec.yaml"
    write_spec(str(real), mock_spec(host, 0))
    os.makedirs(tmp_path / "cdi")
    os.symlink(real, tmp_path / "cdi" / names.CDI_SPEC_MOCK_FILE)
    b, counted = quiet_builder(host, tmp_path, monkeypatch)
    b.build()
    assert counted.calls > 0


def test_without_inotify_one_stat_per_path(host, tmp_path, monkeypatch):
    b, counted = quiet_builder(host, tmp_path, monkeypatch, inotify=False)
    b.build()
    calls = counted.calls
    assert 0 < calls <= 8
    os.makedirs(os.path.join(hcas_of(host), "mlx5_0"))
    assert b.build().hca_count == 1


def test_a_quiet_tree_is_still_revalidated_by_stat_after_a_while(host, tmp_path, monkeypatch):
    # A mount over a watched path raises no event: trust expires.
    b, counted = quiet_builder(host, tmp_path, monkeypatch, revalidate_s=0.0)
    b.build()
    assert counted.calls > 0


@pytest.mark.parametrize("links, path, holders, resolved", [
    ({}, "/a/b", ["", "/a"], "/a/b"),
    ({"/l": "/a"}, "/l/b", ["", "/a"], "/a/b"),
    ({"/x/l": "../a"}, "/x/l/b", ["", "/x", "/a"], "/a/b"),
    ({"/l": "/m", "/m": "/a"}, "/l/b", ["", "/a"], "/a/b"),   # two hops, both links in ""
    ({"/l": "/l"}, "/l/b", None, None),                       # a loop
])
def test_resolution_dirs_follow_each_link(links, path, holders, resolved, tmp_path):
    # Paths in the table are under tmp_path ("" is tmp_path itself).
    from mokka.nri.watch import resolution_dirs
    root = str(tmp_path)
    for at, target in links.items():
        os.makedirs(os.path.dirname(root + at), exist_ok=True)
        os.symlink(root + target if target.startswith("/") else target, root + at)
    got = resolution_dirs(root + path)
    if resolved is None:
        assert got is None
        return
    assert got[-1] == root + resolved                  # where it resolves to
    assert {root + h for h in holders} <= set(got)     # every directory holding a hop
    assert "/" in got


def test_the_mig_management_capabilities_are_the_config_and_monitor_nodes(host, tmp_path):
    os.makedirs(host.caps)
    for minor, mode in ((1, 0o400), (2, 0o444), (12, 0o444), (13, 0o444)):
        mknod(host.cap_node(minor), names.NVIDIA_CAPS_MAJOR, minor, mode)
    open(host.cap_node(3), "w").close()                  # an unprivileged agent's placeholder
    view = builder(host, tmp_path).build()
    assert view.mig_caps == (Device("/dev/nvidia-caps/nvidia-cap1", "c", 236, 1, 0o400, 0, 0),
                             Device("/dev/nvidia-caps/nvidia-cap2", "c", 236, 2, 0o444, 0, 0))
    # A GPU instance's capability never reaches the whole-node view; nor do the caps the top level.
    assert not [d for d in view.dev_nodes if "caps" in d.path]


@pytest.mark.parametrize("mode,staged", [(0o755, True), (0o644, False)],
                         ids=["an executable helper is staged", "a file that cannot run is not"])
def test_the_proc_hook_counts_as_staged_only_when_it_can_run(host, tmp_path, mode, staged):
    assert not builder(host, tmp_path).build().proc_hook_staged
    os.makedirs(os.path.dirname(host.proc_hook))
    with open(host.proc_hook, "wb") as f:
        f.write(b"\x7fELF")
    os.chmod(host.proc_hook, mode)
    assert builder(host, tmp_path).build().proc_hook_staged is staged


def test_a_proc_hook_staged_later_is_seen_by_the_same_builder(host, tmp_path):
    view = builder(host, tmp_path)
    assert not view.build().proc_hook_staged
    os.makedirs(os.path.dirname(host.proc_hook))
    with open(host.proc_hook, "wb") as f:
        f.write(b"\x7fELF")
    os.chmod(host.proc_hook, 0o755)
    assert view.build().proc_hook_staged
