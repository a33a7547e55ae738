"""``mokka exec``'s decisions, without a namespace: what it takes from the kernel's text
(the capability it needs, what is mounted under /dev) and what the NRI decision gives a
GPU-selected container, here at the overlay's host path."""

from __future__ import annotations

import pytest

from mokka.core.edits import Device
from mokka.exec import plan
from mokka.nri.inject.model import NodeView

ROOT = "/scratch/var/lib/nvml-mock"


@pytest.mark.parametrize("status,expected", [
    ("Name:\tx\nCapEff:\t000001ffffffffff\n", True),
    ("CapEff:\t0000000000200000\n", True),
    ("CapEff:\t00000000001fffff\n", False),
    ("CapEff:\t0000000000000000\n", False),
    ("Name:\tx\n", False),
    ("CapEff:\tnot-hex\n", False),
], ids=["root", "CAP_SYS_ADMIN alone", "every capability below it", "none",
        "no CapEff line", "unreadable CapEff"])
def test_the_mounts_need_cap_sys_admin_in_the_effective_set(status, expected):
    assert plan.has_sys_admin(status) is expected


MOUNTINFO = "\n".join([
    "22 27 0:21 / /proc rw,relatime - proc proc rw",
    "24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw",
    "25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw",
    "26 24 0:24 / /dev/pts rw,relatime - devpts devpts rw",
    "29 26 0:26 / /dev/pts rw,relatime - devpts devpts rw",
    "30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw",
    "31 24 0:28 / /dev/mqueue rw,relatime - mqueue mqueue rw",
    "32 31 0:28 / /dev/mqueue/inner rw,relatime - tmpfs tmpfs rw",
    "33 27 0:29 / /devices rw,relatime - tmpfs tmpfs rw",
    "34 24 0:30 / /dev/my\\040disk rw,relatime - tmpfs tmpfs rw",
    "35 24 254:0 /x /dev/termination-log rw,relatime - ext4 /dev/vda rw",
    "",
])


def test_what_an_overlay_on_dev_hides_is_each_outermost_submount_once():
    assert plan.submounts(MOUNTINFO, "/dev") == [
        "/dev/shm", "/dev/pts", "/dev/mqueue", "/dev/my disk", "/dev/termination-log"]


def test_dev_itself_and_look_alike_paths_are_not_submounts():
    assert plan.submounts("24 27 0:6 / /dev rw - devtmpfs devtmpfs rw\n"
                          "33 27 0:29 / /devices rw - tmpfs tmpfs rw\n", "/dev") == []


def view(**kw) -> NodeView:
    kw.setdefault("dev_nodes", (Device("/dev/nvidia0", "c", 195, 0), Device("/dev/nvidiactl", "c", 195, 255)))
    return NodeView(
        staged_shims=frozenset({f"{ROOT}/driver/usr/local/lib/libibmocksys.so.1",
                                f"{ROOT}/driver/usr/local/lib/libmockfs.so.1"}), **kw)


def test_the_command_gets_a_gpu_containers_environment_at_the_overlays_host_path():
    setup = plan.decide(ROOT, {"HOME": "/root", "PATH": "/usr/bin:/bin"}, view(proc_hook_staged=True))
    env = setup.env
    assert env["MOCK_NVML_CONFIG"] == "/scratch/var/lib/nvml-mock/driver/config/config.yaml"
    assert env["PATH"] == "/scratch/var/lib/nvml-mock/driver/usr/bin:/usr/bin:/bin"
    assert env["LD_LIBRARY_PATH"] == "/scratch/var/lib/nvml-mock/driver/usr/lib64"
    # The hook gives /sys the PCI tree: no libmockfs pointing at the node's whole one.
    assert env["LD_PRELOAD"] == "/scratch/var/lib/nvml-mock/driver/usr/local/lib/libibmocksys.so.1"
    assert "MOCK_PCI_ROOT" not in env
    assert env["MOCK_IB"] == "off"
    assert env["HOME"] == "/root"
    assert setup.dev_lower == "/scratch/var/lib/nvml-mock/driver/dev"


def test_without_a_staged_hook_libmockfs_shows_the_staged_pci_tree():
    env = plan.decide(ROOT, {"PATH": "/bin"}, view()).env
    assert env["MOCK_PCI_ROOT"] == "/scratch/var/lib/nvml-mock"
    assert env["LD_PRELOAD"] == ("/scratch/var/lib/nvml-mock/driver/usr/local/lib/libibmocksys.so.1:"
                                 "/scratch/var/lib/nvml-mock/driver/usr/local/lib/libmockfs.so.1")


def test_a_value_the_caller_sets_wins_as_a_containers_own_does():
    setup = plan.decide(ROOT, {"MOCK_NVML_CONFIG": "/elsewhere.yaml"}, view())
    assert setup.env["MOCK_NVML_CONFIG"] == "/elsewhere.yaml"


def test_the_tree_is_read_only_and_its_config_directory_writable_as_in_a_container():
    setup = plan.decide(ROOT, {}, view())
    assert [(m.source, m.destination, "ro" in m.options) for m in setup.mounts] == [
        ("/scratch/var/lib/nvml-mock", "/scratch/var/lib/nvml-mock", True),
        ("/scratch/var/lib/nvml-mock/driver/config", "/scratch/var/lib/nvml-mock/driver/config", False),
    ]


def test_the_proc_hook_runs_in_its_overlay_and_root_form_when_staged():
    setup = plan.decide(ROOT, {}, view(proc_hook_staged=True))
    assert setup.hook.path == "/scratch/var/lib/nvml-mock/driver/usr/libexec/nvml-mock/nvml-mock-proc-hook"
    assert plan.hook_argv(setup.hook) == ["nvml-mock-proc-hook", "/scratch/var/lib/nvml-mock", "/"]
    assert plan.decide(ROOT, {}, view()).hook is None


@pytest.mark.parametrize("caller", [{}, {"MOCK_IB": "off"}, {"MOCK_IB": ""}], ids=["unset", "off", "empty"])
def test_infiniband_unset_or_off_is_a_gpu_only_containers_and_the_hook_is_told(caller):
    setup = plan.decide(ROOT, caller, view(proc_hook_staged=True, hca_count=8))
    assert setup.env["MOCK_IB"] == "off"
    assert "MOCK_IB_ROOT" not in setup.env and "MOCK_IB_PING_SOCKET" not in setup.env
    assert setup.hook.env == ("MOCK_IB=off",)
    assert plan.ib_problem(caller) is None


@pytest.mark.parametrize("tier", ["full", "sysfs"])
def test_an_infiniband_tier_decides_as_the_annotated_pod_at_that_tier(tier):
    setup = plan.decide(ROOT, {"MOCK_IB": tier, "PATH": "/bin"}, view(proc_hook_staged=True, hca_count=8))
    assert setup.env["MOCK_IB"] == tier
    assert setup.env["MOCK_IB_ROOT"] == "/scratch/var/lib/nvml-mock/ib"
    assert setup.env["MOCK_IB_PING_SOCKET"] == "/scratch/var/lib/nvml-mock/run/mock-ib.sock"
    assert setup.env["MOCK_NVML_CONFIG"] == "/scratch/var/lib/nvml-mock/driver/config/config.yaml"
    # The hook's OVERLAY ROOTFS form reads MOCK_IB from its own environment.
    assert setup.hook.env == (f"MOCK_IB={tier}",)
    assert plan.hook_argv(setup.hook) == ["nvml-mock-proc-hook", "/scratch/var/lib/nvml-mock", "/"]
    assert plan.ib_problem({"MOCK_IB": tier}) is None


@pytest.mark.parametrize("value", ["on", "Full", "true", "full ", "of"])
def test_a_mock_ib_of_no_tier_is_one_line(value):
    assert plan.ib_problem({"MOCK_IB": value}) == (
        f"MOCK_IB={value} is no InfiniBand tier: give full, sysfs or off (unset: off)")


# --- NVIDIA_VISIBLE_DEVICES: the caller's GPUs, as a container allocated them ---------------
GPUS = (plan.Gpu(0, "GPU-aaaa", 0), plan.Gpu(1, "GPU-bbbb", 2), plan.Gpu(2, "GPU-cccc", 1))
NODES = tuple(Device(f"/dev/nvidia{m}", "c", 195, m) for m in (0, 1, 2)) + (
    Device("/dev/nvidiactl", "c", 195, 255), Device("/dev/nvidia-uvm", "c", 510, 0))


@pytest.mark.parametrize("value, indices", [
    (None, [0, 1, 2]), ("all", [0, 1, 2]), (" ALL ", [0, 1, 2]), ("1", [1]), ("GPU-cccc,0", [0, 2]),
    ("2, 2", [2]), ("none", []), ("void", []), ("", []), (" None ", []),
], ids=["unset", "all", "all, padded", "an index", "a uuid and an index", "twice", "none", "void", "empty",
        "none, padded"])
def test_visible_devices_names_gpus_by_index_or_uuid(value, indices):
    environ = {} if value is None else {"NVIDIA_VISIBLE_DEVICES": value}
    assert [gpu.index for gpu in plan.visible_gpus(environ, GPUS)] == indices


@pytest.mark.parametrize("value, entry", [("3", "3"), ("0,GPU-dddd", "GPU-dddd"), ("0,", ""),
                                          ("nothing", "nothing")])
def test_visible_devices_naming_no_gpu_of_the_node_is_one_line(value, entry):
    assert plan.visible_gpus({"NVIDIA_VISIBLE_DEVICES": value}, GPUS) == (
        f"NVIDIA_VISIBLE_DEVICES={value}: {entry!r} is no GPU of this node (indices 0, 1, 2); "
        "give all, none, or a comma list of its GPU indices or UUIDs")


@pytest.mark.parametrize("value, entry", [("MIG-1234", "MIG-1234"), ("0,0:1", "0:1")])
def test_a_mig_device_in_visible_devices_says_to_select_its_gpu(value, entry):
    assert plan.visible_gpus({"NVIDIA_VISIBLE_DEVICES": value}, GPUS) == (
        f"NVIDIA_VISIBLE_DEVICES={value}: {entry!r} names a MIG device, which mokka exec does not select "
        "alone; give its GPU's index or UUID (the command sees that GPU's MIG devices)")


def test_no_gpu_selected_leaves_every_gpu_node_out_but_the_control_nodes():
    setup = plan.decide(ROOT, {}, view(dev_nodes=NODES), [])
    assert setup.hidden_gpu_nodes == ("nvidia0", "nvidia1", "nvidia2")
    assert setup.env["MOCK_NVML_VISIBLE_DEVICES"] == "none"
    assert "MOCK_NVML_VISIBLE_DEVICES" not in plan.decide(ROOT, {}, view(dev_nodes=NODES), [GPUS[1]]).env


def test_the_gpus_not_selected_are_left_out_of_dev_by_their_minor():
    # GPU 1 has minor 2: /dev/nvidia2 stays, the control nodes are never hidden.
    setup = plan.decide(ROOT, {}, view(dev_nodes=NODES), [GPUS[1]])
    assert setup.hidden_gpu_nodes == ("nvidia0", "nvidia1")
    assert plan.decide(ROOT, {}, view(dev_nodes=NODES)).hidden_gpu_nodes == ()
