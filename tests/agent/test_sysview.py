"""The /sys view the agent stages for GPU containers (each GPU's PCI device and bus links,
the kernel modules, the /proc/modules lines) and each GPU's /proc/driver/nvidia/gpus
information: what a reader finds after ``node-agent --once``, what a smaller profile
leaves, and that teardown leaves nothing."""

from __future__ import annotations

import os

import pytest
import yaml
from helpers import profile_bytes, run_agent
from treelist import diff, listing

from mokka.core.overlay import host_overlay

T4_0, T4_1 = "0000:3b:00.0", "0000:86:00.0"


def t4_profile(outside: str, count: int, modules: list[str] | None) -> str:
    doc = yaml.safe_load(profile_bytes("t4", count))
    if modules is not None:
        doc["system"]["kernel_modules"] = modules
    path = os.path.join(outside, f"t4-{count}-{len(modules or [])}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def stage(scratch, count=2, modules=("gdrdrv", "nvidia_fs")) -> str:
    root, outside, _ = scratch
    r = run_agent(root, "--once", "--profile", t4_profile(outside, count, list(modules)))
    assert r.returncode == 0, r.stderr
    return host_overlay(root).root


def test_each_gpu_has_its_own_pci_lowers_with_the_kernels_layout(scratch):
    ov = stage(scratch)
    gpu1 = os.path.join(ov, "sysview/gpu/1")
    # t4's GPU 1 (bus 86) behind its root port 00:02.0 and its switch: 84:00.0 over 85:00.0.
    chain = "pci0000:00/0000:00:02.0/0000:84:00.0/0000:85:00.0"
    device = os.path.join(gpu1, f"devices/{chain}/{T4_1}")
    assert sorted(os.listdir(os.path.join(gpu1, "devices/pci0000:00"))) == ["0000:00:02.0"]
    assert sorted(os.listdir(os.path.join(gpu1, f"devices/{chain}"))) == sorted(
        [T4_1, "class", "config", "device", "driver", "irq", "numa_node", "resource", "revision",
         "secondary_bus_number", "subordinate_bus_number", "subsystem_device", "subsystem_vendor",
         "vendor"])
    assert read(os.path.join(device, "class")) == "0x030200\n"
    assert read(os.path.join(device, "vendor")) == "0x10de\n"
    assert read(os.path.join(device, "device")) == "0x1eb8\n"
    assert read(os.path.join(device, "subsystem_device")) == "0x12a2\n"
    assert read(os.path.join(device, "numa_node")) == "0\n"
    assert os.readlink(os.path.join(device, "driver")) == "../../../../../../bus/pci/drivers/nvidia"
    link = os.path.join(gpu1, f"bus/pci/devices/{T4_1}")
    assert os.readlink(link) == f"../../../devices/{chain}/{T4_1}"
    bound = os.path.join(gpu1, f"bus/pci/drivers/nvidia/{T4_1}")
    assert os.readlink(bound) == f"../../../../devices/{chain}/{T4_1}"
    # Followed as a reader follows them, inside the lower: the device directory and back.
    assert os.path.realpath(link) == os.path.realpath(bound) == os.path.realpath(device)
    assert os.path.realpath(os.path.join(device, "driver")) == os.path.join(
        os.path.realpath(gpu1), "bus/pci/drivers/nvidia")
    assert sorted(os.listdir(os.path.join(ov, "sysview/gpu/0/bus/pci/devices"))) == [
        "0000:00:01.0", "0000:39:00.0", "0000:3a:00.0", T4_0]
    assert sorted(os.listdir(os.path.join(ov, "sysview/gpu"))) == ["0", "1"]


def test_each_gpus_bridges_are_pcie_ports_with_its_bus_range(scratch):
    ov = stage(scratch)
    gpu1 = os.path.join(ov, "sysview/gpu/1")
    bus = os.path.join(gpu1, "bus/pci/devices")
    ports = {bdf: {name: read(os.path.join(bus, bdf, name)) for name in (
        "vendor", "device", "class", "numa_node", "secondary_bus_number", "subordinate_bus_number")}
        for bdf in ("0000:00:02.0", "0000:84:00.0", "0000:85:00.0")}
    assert ports == {
        "0000:00:02.0": {"vendor": "0x8086\n", "device": "0x2030\n", "class": "0x060400\n",
                         "numa_node": "0\n", "secondary_bus_number": "132\n",
                         "subordinate_bus_number": "134\n"},
        "0000:84:00.0": {"vendor": "0x1000\n", "device": "0xc030\n", "class": "0x060400\n",
                         "numa_node": "0\n", "secondary_bus_number": "133\n",
                         "subordinate_bus_number": "134\n"},
        "0000:85:00.0": {"vendor": "0x1000\n", "device": "0xc030\n", "class": "0x060400\n",
                         "numa_node": "0\n", "secondary_bus_number": "134\n",
                         "subordinate_bus_number": "134\n"}}
    with open(os.path.join(bus, "0000:84:00.0/config"), "rb") as f:
        config = f.read()
    # Broadcom's ids, class 06 04 00, header type 1, then primary 84, secondary 85, subordinate 86.
    assert (len(config), config[:4], config[9:12], config[14], config[0x18:0x1b]) == (
        256, b"\x00\x10\x30\xc0", b"\x00\x04\x06", 1, b"\x84\x85\x86")
    assert os.readlink(os.path.join(bus, "0000:84:00.0")) == \
        "../../../devices/pci0000:00/0000:00:02.0/0000:84:00.0"
    assert os.path.realpath(os.path.join(bus, "0000:84:00.0/driver")) == os.path.join(
        os.path.realpath(gpu1), "bus/pci/drivers/pcieport")
    assert sorted(os.listdir(os.path.join(gpu1, "bus/pci/drivers/pcieport"))) == [
        "0000:00:02.0", "0000:84:00.0", "0000:85:00.0"]


def test_the_shim_tree_has_the_same_device_files_as_the_view(scratch):
    ov = stage(scratch)
    chain = "pci0000:00/0000:00:01.0/0000:39:00.0/0000:3a:00.0"
    shim = os.path.join(ov, f"sys/devices/{chain}/{T4_0}")
    view = os.path.join(ov, f"sysview/gpu/0/devices/{chain}/{T4_0}")
    assert sorted(os.listdir(shim)) == sorted(os.listdir(view)) == [
        "class", "config", "device", "driver", "irq", "numa_node", "resource", "revision",
        "subsystem_device", "subsystem_vendor", "vendor"]
    for name in ("class", "config", "vendor", "resource"):
        with open(os.path.join(shim, name), "rb") as a, open(os.path.join(view, name), "rb") as b:
            assert a.read() == b.read(), name
    assert sorted(os.listdir(os.path.join(ov, "sys/bus/pci/drivers/nvidia"))) == [T4_0, T4_1]
    assert sorted(os.listdir(os.path.join(ov, "sys/devices/pci0000:00"))) == ["0000:00:01.0", "0000:00:02.0"]


def test_the_profiles_modules_are_staged_as_sys_module_shows_them(scratch):
    ov = stage(scratch)
    modules = os.path.join(ov, "sysview/module")
    assert sorted(os.listdir(modules)) == ["gdrdrv", "nvidia", "nvidia_fs", "nvidia_modeset",
                                           "nvidia_uvm"]
    nvidia = os.path.join(modules, "nvidia")
    assert read(os.path.join(nvidia, "version")) == "550.163.01\n"
    assert read(os.path.join(nvidia, "initstate")) == "live\n"
    assert read(os.path.join(nvidia, "refcnt")) == "3\n"
    assert read(os.path.join(nvidia, "coresize")) == "56954880\n"
    holders = os.path.join(nvidia, "holders")
    assert {n: os.readlink(os.path.join(holders, n)) for n in os.listdir(holders)} == {
        "gdrdrv": "../../gdrdrv", "nvidia_uvm": "../../nvidia_uvm",
        "nvidia_modeset": "../../nvidia_modeset"}
    assert os.path.realpath(os.path.join(holders, "nvidia_uvm")) == os.path.realpath(
        os.path.join(modules, "nvidia_uvm"))
    assert read(os.path.join(modules, "nvidia_uvm/version")) == "550.163.01\n"
    assert read(os.path.join(modules, "nvidia_uvm/refcnt")) == "0\n"
    assert os.listdir(os.path.join(modules, "nvidia_uvm/holders")) == []
    assert read(os.path.join(modules, "gdrdrv/version")) == "2.4\n"
    assert read(os.path.join(modules, "nvidia_fs/version")) == "2.20.5\n"
    assert read(os.path.join(ov, "sysview/proc-modules")) == (
        "nvidia_fs 262144 0 - Live 0x0000000000000000\n"
        "gdrdrv 24576 0 - Live 0x0000000000000000\n"
        "nvidia_uvm 1540096 0 - Live 0x0000000000000000\n"
        "nvidia_modeset 1306624 0 - Live 0x0000000000000000\n"
        "nvidia 56954880 3 gdrdrv,nvidia_uvm,nvidia_modeset, Live 0x0000000000000000\n")


def test_the_char_devices_the_driver_registers_are_staged_in_the_kernels_format(scratch):
    ov = stage(scratch)
    path = os.path.join(ov, "sysview/proc-devices")
    assert read(path) == (
        "195 nvidia\n"
        "195 nvidia-modeset\n"
        "195 nvidiactl\n"
        "234 nvidia-nvlink\n"
        "236 nvidia-caps\n"
        "510 nvidia-uvm\n"
        "511 nvidia-nvswitch\n")
    assert os.stat(path).st_mode & 0o777 == 0o444


def test_a_node_with_imex_channels_lists_their_major_too(scratch):
    root, _, _ = scratch
    r = run_agent(root, "--once", "--profile", "h100")       # NVLink fabric: IMEX channels
    assert r.returncode == 0, r.stderr
    ov = host_overlay(root).root
    assert read(os.path.join(ov, "sysview/proc-devices")) == (
        "195 nvidia\n"
        "195 nvidia-modeset\n"
        "195 nvidiactl\n"
        "234 nvidia-nvlink\n"
        "235 nvidia-caps-imex-channels\n"
        "236 nvidia-caps\n"
        "510 nvidia-uvm\n"
        "511 nvidia-nvswitch\n")
    assert len(os.listdir(os.path.join(ov, "driver/dev/nvidia-caps-imex-channels"))) == 2048
    # The whole-file substitute the NVIDIA DRA driver's compute-domain plugin reads through
    # ALT_PROC_DEVICES_PATH (its chart's altProcDevices names this path).
    assert read(os.path.join(ov, "imex/proc-devices")) == (
        "Character devices:\n"
        "195 nvidia\n"
        "195 nvidia-modeset\n"
        "195 nvidiactl\n"
        "234 nvidia-nvlink\n"
        "235 nvidia-caps-imex-channels\n"
        "236 nvidia-caps\n"
        "510 nvidia-uvm\n"
        "511 nvidia-nvswitch\n"
        "\n"
        "Block devices:\n")


def test_each_gpu_has_the_drivers_information_file(scratch):
    ov = stage(scratch)
    gpus = os.path.join(ov, "driver/proc/driver/nvidia/gpus")
    assert sorted(os.listdir(gpus)) == [T4_0, T4_1]
    assert read(os.path.join(gpus, T4_1, "information")) == (
        "Model: \t\t NVIDIA T4\n"
        "IRQ:   \t\t 301\n"
        "GPU UUID: \t GPU-00000074-0000-0000-0000-000000000001\n"
        "Video BIOS: \t 90.04.96.00.02\n"
        "Bus Type: \t PCIe\n"
        "DMA Size: \t 47 bits\n"
        "DMA Mask: \t 0x7fffffffffff\n"
        f"Bus Location: \t {T4_1}\n"
        "Device Minor: \t 1\n"
        "GPU Firmware: \t 550.163.01\n"
        "GPU Excluded:\t No\n")


def test_a_smaller_profile_with_other_modules_converges(scratch):
    root, outside, _ = scratch
    stage(scratch)
    small = t4_profile(outside, 1, ["nvidia_peermem"])
    assert run_agent(root, "--once", "--profile", small).returncode == 0
    ov = host_overlay(root).root
    assert os.listdir(os.path.join(ov, "sysview/gpu")) == ["0"]
    assert os.listdir(os.path.join(ov, "driver/proc/driver/nvidia/gpus")) == [T4_0]
    assert sorted(os.listdir(os.path.join(ov, "sysview/module"))) == [
        "nvidia", "nvidia_modeset", "nvidia_peermem", "nvidia_uvm"]
    assert sorted(os.listdir(os.path.join(ov, "sysview/module/nvidia/holders"))) == [
        "nvidia_modeset", "nvidia_peermem", "nvidia_uvm"]
    assert read(os.path.join(ov, "sysview/proc-modules")).splitlines()[0] == \
        "nvidia_peermem 16384 0 - Live 0x0000000000000000"
    # Exactly what a fresh run of the smaller profile stages.
    converged = listing(root)
    assert run_agent(root, "--teardown").returncode == 0
    assert run_agent(root, "--once", "--profile", small).returncode == 0
    fresh = listing(root)
    assert converged == fresh, diff(fresh, converged)


def test_teardown_leaves_nothing_of_the_view(scratch):
    root, _, _ = scratch
    before = listing(root)
    ov = stage(scratch)
    assert os.path.isdir(os.path.join(ov, "sysview/module/nvidia_uvm/holders"))
    assert run_agent(root, "--teardown").returncode == 0
    assert not os.path.exists(os.path.join(ov, "sysview"))
    after = listing(root)
    assert after == before, diff(before, after)


def test_the_agent_refuses_an_unknown_module_in_one_line(scratch):
    root, outside, _ = scratch
    bad = t4_profile(outside, 1, ["gdrdrv", "nvidia_gds"])
    r = run_agent(root, "--once", "--profile", bad)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        f"node-agent: {bad}: system.kernel_modules[1]: unknown kernel module 'nvidia_gds'; use one "
        "of gdrdrv, mlx5_core, nvidia, nvidia_drm, nvidia_fs, nvidia_modeset, nvidia_peermem, "
        "nvidia_uvm")
    assert not os.path.exists(os.path.join(host_overlay(root).root, "sysview"))


H100_HCA_0, H100_HCA_7 = "0000:1c:00.0", "0000:cd:00.0"


def stage_h100(scratch, profile: str = "h100") -> str:
    root, _, _ = scratch
    r = run_agent(root, "--once", "--profile", profile)
    assert r.returncode == 0, r.stderr
    return host_overlay(root).root


def test_each_hca_is_a_pci_function_beside_its_gpu_with_its_own_lowers(scratch):
    ov = stage_h100(scratch)
    assert sorted(os.listdir(os.path.join(ov, "sysview/hca"))) == [str(n) for n in range(8)]
    hca7 = os.path.join(ov, "sysview/hca/7")
    # GPU 7 is 0000:cb:00.0 under pci0000:80 (NUMA 1), behind root port 80:04.0 and the
    # switch c6:00.0 over c7:00.0; its HCA takes the next free bus, on the same switch.
    assert os.listdir(os.path.join(hca7, "devices")) == ["pci0000:80"]
    chain = "pci0000:80/0000:80:04.0/0000:c6:00.0/0000:c7:01.0"
    device = os.path.join(hca7, f"devices/{chain}/{H100_HCA_7}")
    assert {name: read(os.path.join(device, name)) for name in (
        "vendor", "device", "class", "numa_node", "subsystem_vendor", "subsystem_device",
        "revision", "irq", "modalias")} == {
        "vendor": "0x15b3\n", "device": "0x1021\n", "class": "0x020700\n", "numa_node": "1\n",
        "subsystem_vendor": "0x15b3\n", "subsystem_device": "0x0008\n", "revision": "0x00\n",
        "irq": "0\n", "modalias": "pci:v000015B3d00001021sv000015B3sd00000008bc02sc07i00\n"}
    with open(os.path.join(device, "config"), "rb") as f:
        config = f.read()
    assert len(config) == 256 and config[:4] == b"\xb3\x15\x21\x10" and config[9:12] == b"\x00\x07\x02"
    assert os.readlink(os.path.join(device, "driver")) == "../../../../../../bus/pci/drivers/mlx5_core"
    link = os.path.join(hca7, f"bus/pci/devices/{H100_HCA_7}")
    assert os.readlink(link) == f"../../../devices/{chain}/{H100_HCA_7}"
    bound = os.path.join(hca7, f"bus/pci/drivers/mlx5_core/{H100_HCA_7}")
    assert os.path.realpath(bound) == os.path.realpath(link) == os.path.realpath(device)
    assert read(os.path.join(hca7, "bus/pci/devices/0000:c7:01.0/secondary_bus_number")) == "205\n"
    # The RDMA device under its PCI function, as the kernel lays it out.
    child = os.path.join(device, "infiniband/mlx5_7")
    assert os.listdir(os.path.join(device, "infiniband")) == ["mlx5_7"]
    assert read(os.path.join(child, "hca_type")) == "MT4129\n"
    assert read(os.path.join(child, "ports/1/rate")) == "400 Gb/sec (4X NDR)\n"
    assert os.readlink(os.path.join(child, "device")) == f"../../../{H100_HCA_7}"
    assert os.path.realpath(os.path.join(child, "device")) == os.path.realpath(device)


def test_a_gpu_and_its_hca_share_one_switch(scratch):
    ov = stage_h100(scratch)
    bus = os.path.join(ov, "sys/bus/pci/devices")
    gpu0, hca0 = (os.path.realpath(os.path.join(bus, bdf)) for bdf in ("0000:1a:00.0", H100_HCA_0))
    switch = os.path.join(ov, "sys/devices/pci0000:00/0000:00:01.0/0000:18:00.0")
    assert gpu0 == os.path.join(os.path.realpath(switch), "0000:19:00.0/0000:1a:00.0")
    assert hca0 == os.path.join(os.path.realpath(switch), "0000:19:01.0", H100_HCA_0)
    # GPU 1 (bus 1b) has a switch of its own under another root port.
    assert os.path.realpath(os.path.join(bus, "0000:1b:00.0")) == os.path.realpath(os.path.join(
        ov, "sys/devices/pci0000:00/0000:00:02.0/0000:16:00.0/0000:17:00.0/0000:1b:00.0"))


def test_the_hcas_sit_in_the_shim_tree_too_and_not_in_the_driver_root(scratch):
    ov = stage_h100(scratch)
    assert sorted(os.listdir(os.path.join(ov, "sys/bus/pci/drivers/mlx5_core"))) == [
        "0000:1c:00.0", "0000:1d:00.0", "0000:4c:00.0", "0000:4d:00.0",
        "0000:8c:00.0", "0000:8d:00.0", "0000:cc:00.0", H100_HCA_7]
    # 8 GPUs, 8 HCAs and per GPU a root port, a switch's upstream port and two downstream ports.
    assert len(os.listdir(os.path.join(ov, "sys/bus/pci/devices"))) == 48
    assert len(os.listdir(os.path.join(ov, "sys/bus/pci/drivers/pcieport"))) == 32
    assert read(os.path.join(ov, f"sys/bus/pci/devices/{H100_HCA_0}/numa_node")) == "0\n"
    assert not os.path.exists(os.path.join(ov, "driver/sys/bus/pci/drivers/mlx5_core"))
    # The IB class tree's device link reads the PCI function's ids (ibv_devinfo's vendor_part_id).
    klass = os.path.join(ov, "ib/sys/class/infiniband/mlx5_0")
    assert os.readlink(os.path.join(klass, "device")) == (
        f"../../../../../sys/devices/pci0000:00/0000:00:01.0/0000:18:00.0/0000:19:01.0/{H100_HCA_0}")
    assert read(os.path.join(klass, "device/device")) == "0x1021\n"
    assert read(os.path.join(klass, "device/vendor")) == "0x15b3\n"


def test_a_connectx6_hca_type_gives_its_device_id(scratch):
    ov = stage_h100(scratch, "a100")                       # hca_type MT4123: ConnectX-6
    # A100's GPU 0 is 0000:07:00.0 behind the switch 05:00.0 over 06:xx.0; bus 08 is free.
    device = os.path.join(ov, "sysview/hca/0/bus/pci/devices/0000:08:00.0")
    assert os.readlink(device) == \
        "../../../devices/pci0000:00/0000:00:01.0/0000:05:00.0/0000:06:01.0/0000:08:00.0"
    assert read(os.path.join(device, "device")) == "0x101b\n"
    assert read(os.path.join(ov, "ib/sys/class/infiniband/mlx5_0/device/device")) == "0x101b\n"
    assert read(os.path.join(ov, "ib/sys/class/infiniband_verbs/uverbs0/device/modalias")) == \
        "pci:v000015B3d0000101Bsv000015B3sd00000008bc02sc07i00\n"


def test_a_profile_without_infiniband_stages_no_hca(scratch):
    ov = stage(scratch)
    assert not os.path.exists(os.path.join(ov, "sysview/hca"))
    assert not os.path.exists(os.path.join(ov, "sys/bus/pci/drivers/mlx5_core"))


@pytest.mark.parametrize("gpus, block, error", [
    (9, {"hcas_per_gpu": 16}, "infiniband.hcas_per_gpu: 16 for each of 9 GPUs is 144 HCAs; a node "
                              "has at most 128 (lower it, or set hca_count)"),
    (8, {"hca_count": 129}, "infiniband.hca_count: must be at most 128, got 129"),
], ids=["hcas_per_gpu adds up past the bound", "hca_count past the bound"])
def test_the_agent_refuses_more_hcas_than_a_node_has_room_for_in_one_line(scratch, gpus, block, error):
    root, outside, _ = scratch
    doc = yaml.safe_load(profile_bytes("h100", gpus))
    doc["infiniband"].update(block)
    path = os.path.join(outside, "h100-many-hcas.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    r = run_agent(root, "--once", "--profile", path)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == f"node-agent: {path}: {error}"
    assert not os.path.exists(os.path.join(host_overlay(root).root, "sysview"))
