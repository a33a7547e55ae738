"""The Go reader (main.go here): a static Go program that prints, as JSON, what
gpu-feature-discovery, the device plugin and mig-parted read of a node themselves
(/sys/bus/pci/devices, /sys/module/nvidia/version, /proc/driver/nvidia/version,
/proc/modules), out of LD_PRELOAD's reach. Built once per session with the machine's
Go (Debian's golang-go; std library only, CGO_ENABLED=0, no module, no network).

No ``go`` skips, loudly, unless MOKKA_REQUIRE_RUNTIME=1 (CI), where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(SOURCE_DIR, "main.go")
#: Its name wherever the tests put it (a container image, a scratch directory).
NAME = "goreader"
BUILD_TIMEOUT_S = 300


def go_missing() -> None:
    reason = "GO NOT INSTALLED: `apt-get install golang-go` (the README's test packages, \"Run the tests\") builds the Go reader"
    if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
        pytest.fail(reason)
    pytest.skip("!" * 20 + " " + reason + " " + "!" * 20)


def build(out_dir: str) -> str:
    """``out_dir``/goreader, statically linked; every Go cache inside ``out_dir``."""
    go = shutil.which("go")
    if go is None:
        go_missing()
    out = os.path.join(out_dir, NAME)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": out_dir,
        "GOCACHE": os.path.join(out_dir, "gocache"),
        "GOPATH": os.path.join(out_dir, "gopath"),
        # A single file of the std library: no module, no proxy, no toolchain download.
        "GO111MODULE": "off", "GOFLAGS": "", "GOTOOLCHAIN": "local", "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    done = subprocess.run([go, "build", "-trimpath", "-o", out, SOURCE], cwd=SOURCE_DIR, env=env,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, f"go build of {SOURCE} failed:\n{done.stderr}"
    return out


def parse(stdout: str) -> dict:
    """The reader's report."""
    return json.loads(stdout)


def nvidia_devices(report: dict) -> list[dict]:
    """The PCI entries with NVIDIA's vendor id."""
    return [d for d in report["pci_devices"] if d["vendor"] == "0x10de"]


# --- What the reader must see on a staged t4 node (4 GPUs, driver 550.163.01) ------

#: The t4 profile's GPUs by minor number (/dev/nvidiaN), as sysfs spells bus ids.
T4_BUS_IDS = {0: "0000:3b:00.0", 1: "0000:86:00.0", 2: "0000:af:00.0", 3: "0000:d8:00.0"}
T4_DRIVER_VERSION = "550.163.01"
#: One T4 as GFD, the device plugin and mig-parted read it: NVIDIA, TU104GL, a 3D
#: controller (0x0302: not VGA, so no display), NUMA node 0, under its root complex.
T4_DEVICE = {"vendor": "0x10de", "device": "0x1eb8", "class": "0x030200", "numa_node": "0"}
#: The bridges above each t4 GPU, by minor: a root port on pci0000:00, then a switch's
#: upstream and downstream ports on the two free buses below the GPU's.
T4_BRIDGES = {0: ("0000:00:01.0", "0000:39:00.0", "0000:3a:00.0"),
              1: ("0000:00:02.0", "0000:84:00.0", "0000:85:00.0"),
              2: ("0000:00:03.0", "0000:ad:00.0", "0000:ae:00.0"),
              3: ("0000:00:04.0", "0000:d6:00.0", "0000:d7:00.0")}


def t4_entry(minor: int) -> dict:
    bus_id = T4_BUS_IDS[minor]
    resolved = "/".join(["/sys/devices/pci0000:00", *T4_BRIDGES[minor], bus_id])
    return {"name": bus_id, **T4_DEVICE, "resolved": resolved, "under_sys_devices": True}


def bridge_entries(report: dict) -> list[dict]:
    """The PCI entries of class 0x060400 (PCI-to-PCI bridges)."""
    return [d for d in report["pci_devices"] if d["class"] == "0x060400"]


def t4_bridge_names(minors) -> set[str]:
    return {bdf for m in minors for bdf in T4_BRIDGES[m]}


def sees_gpus(report: dict, minors) -> None:
    """The report shows exactly the t4 GPUs of ``minors``, the driver's version in
    /sys/module and /proc/driver, and the driver's modules in /proc/modules where the
    kernel has that file."""
    assert nvidia_devices(report) == [t4_entry(m) for m in sorted(minors)], report
    # Each GPU's bridges are there, PCI-to-PCI bridges, whatever the host has at those addresses.
    assert t4_bridge_names(minors) <= {d["name"] for d in bridge_entries(report)}, report
    assert report["module_nvidia_version"] == T4_DRIVER_VERSION, report
    assert (report["proc_driver_nvidia_version"] or "").startswith(
        f"NVRM version: NVIDIA UNIX {os.uname().machine} Kernel Module  {T4_DRIVER_VERSION}  "), report
    if report["proc_modules_exists"]:
        assert [line.split()[0] for line in report["proc_modules_nvidia"]][:1] == ["nvidia"], report


def sees_no_gpu(report: dict) -> None:
    assert nvidia_devices(report) == [], report
    staged_only = t4_bridge_names(range(4)) - set(host_pci_entries())
    assert not staged_only & {d["name"] for d in report["pci_devices"]}, report
    assert report["module_nvidia_version"] is None, report
    assert report["proc_modules_nvidia"] == [], report


def kernel_entries(report: dict, minors=()) -> list[str]:
    """The names of the PCI entries that are neither NVIDIA's nor the bridges staged above the
    GPUs of ``minors``: the kernel's own."""
    bridges = t4_bridge_names(minors)
    return [d["name"] for d in report["pci_devices"] if d["vendor"] != "0x10de" and d["name"] not in bridges]


def host_pci_entries_beside(minors) -> list[str]:
    """The host's own entries, less those the staged bridges of ``minors`` stand at (the
    staged one is read there)."""
    bridges = t4_bridge_names(minors)
    return [name for name in host_pci_entries() if name not in bridges]


def host_pci_entries() -> list[str]:
    """What this host's kernel lists in /sys/bus/pci/devices (none on a host without PCI)."""
    try:
        return sorted(os.listdir("/sys/bus/pci/devices"))
    except FileNotFoundError:
        return []
