"""gpudriver: device nodes, the profile copy and its compiled companion, procfs (each GPU's
``gpus/<bus id>/information``), the shims, the mock NVML and
CUDA libraries, the proc hook and the CUDA process records' directory; Apply publishes the
driver tree at /run/nvidia/driver.

That tree answers as a driver root does for NVIDIA's GPU Operator validator: its own dev/
with every control node (nvidia-modeset among them, which the validator would otherwise
mknod there), sys/ with the GPUs' PCI tree, /sbin/modprobe (a static stand-in) and the
/proc/modules that stand-in reads.

Every path is a tree entry the converger owns, so a smaller profile removes
the nodes the larger one had. The shim library is written by
``mokka.core.launcher.stage``; its paths are planned here first so the
manifest knows them before they exist.
"""

from __future__ import annotations

import importlib.util
import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import CharDev, Entry, File, Link, remove_tree_quiet
from mokka.agent.simulators import Host, Readiness
from mokka.agent.simulators.publish import DriverPublisher
from mokka.core import fsutil, kernelmodules, launcher, names
from mokka.engine import pair

OWNER = "gpudriver"

PROC_VERSION = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {ver}  Thu Feb 20 23:41:34 UTC 2026\n"
                "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
PROC_PARAMS = ("EnableMSI: 1\nNVreg_RegistryDwords:\nNVreg_DeviceFileGID: 0\n"
               "NVreg_DeviceFileMode: 438\nNVreg_DeviceFileUID: 0\nNVreg_ModifyDeviceFiles: 1\n"
               "NVreg_PreserveVideoMemoryAllocations: 0\nNVreg_EnableResizableBar: 0\n")


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    ov, state = host.overlay, desired.state
    out: dict[str, Entry] = {}
    for gpu in state["gpus"]:
        minor = gpu["minor_number"]
        out[ov.gpu_node(minor)] = CharDev(names.NVIDIA_MAJOR, minor)
    for name, major, minor in names.CONTROL_DEVICES:
        out[ov.control_node(name)] = CharDev(major, minor)
    for config_dir in (ov.driver_config, ov.config):
        out.update(pair.entries(os.path.join(config_dir, names.PROFILE_FILE), File(desired.config_text),
                                File(desired.state_nvml)))
    product = state["gpus"][0].get("name", "") if state["gpus"] else ""
    out[ov.machine_type] = File(f"{product}\n".encode())
    ver = state["system"]["driver_version"]
    out[ov.proc_file(names.PROC_VERSION_FILE)] = File(PROC_VERSION.format(ver=ver).encode())
    out[ov.proc_file(names.PROC_PARAMS_FILE)] = File(PROC_PARAMS.encode())
    for gpu in state["gpus"]:
        out[ov.proc_gpu_information(gpu["pci"]["bdf"])] = File(information(gpu, ver).encode())
    out[ov.driver_proc_modules] = File(proc_modules(desired).encode())
    out.update(native_tree(host, ver))
    return out


#: Architectures whose GPUs run the driver's GSP firmware (the ``GPU Firmware`` line).
GSP_ARCHITECTURES = ("turing", "ampere", "ada", "ada_lovelace", "hopper", "blackwell", "rubin")
#: Bits of system memory a GPU addresses (the driver's DMA mask): 52 from Hopper on (a real
#: H100's file says 52 bits), 47 before.
DMA_BITS_52 = ("hopper", "blackwell", "rubin")


def information(gpu: dict, driver_version: str) -> str:
    """``/proc/driver/nvidia/gpus/<bus id>/information`` as the driver writes it (its labels,
    tabs and order; the firmware line only where GSP runs)."""
    arch = str(gpu.get("architecture") or "").lower()
    bits = 52 if arch in DMA_BITS_52 else 47
    # The driver prints the VBIOS as five lower-case hex bytes; unread, as question marks.
    vbios = str(gpu.get("vbios_version") or "??.??.??.??.??").lower()
    lines = [f"Model: \t\t {gpu.get('name', '')}", f"IRQ:   \t\t {gpu['pci'].get('irq', 0)}",
             f"GPU UUID: \t {gpu['uuid']}", f"Video BIOS: \t {vbios}", "Bus Type: \t PCIe",
             f"DMA Size: \t {bits} bits", f"DMA Mask: \t 0x{(1 << bits) - 1:x}",
             f"Bus Location: \t {gpu['pci']['bdf']}", f"Device Minor: \t {gpu['minor_number']}"]
    if arch in GSP_ARCHITECTURES:
        lines.append(f"GPU Firmware: \t {driver_version}")
    lines.append("GPU Excluded:\t No")
    return "\n".join(lines) + "\n"


def proc_modules(desired: Desired) -> str:
    """The driver root's /proc/modules: the modules its modprobe finds loaded (the same lines
    a GPU container's /proc/modules gains)."""
    return kernelmodules.proc_modules(tuple(desired.state["system"]["kernel_modules"]))


def native_tree(host: Host, driver_version: str) -> dict[str, Entry]:
    """The mock NVML library and the mock CUDA driver as a driver ships them (the
    versioned file, then the soname and the development name as relative links), the
    proc hook when built, and NVIDIA's nvidia-smi when the node gave one."""
    out: dict[str, Entry] = {}
    for data, versioned, soname, dev_link in (
            (host.native.nvml_library, names.NVML_LIB_VERSIONED, names.NVML_LIB_FILE, names.NVML_LIB_DEV_LINK),
            (host.native.cuda_library, names.CUDA_LIB_VERSIONED, names.CUDA_LIB_FILE, names.CUDA_LIB_DEV_LINK)):
        if data is None:
            continue
        file = versioned.format(driver_version=driver_version)
        out[os.path.join(host.overlay.lib, file)] = File(data, 0o755)
        out[os.path.join(host.overlay.lib, soname)] = Link(file)
        out[os.path.join(host.overlay.lib, dev_link)] = Link(soname)
    if host.native.proc_hook is not None:
        out[host.overlay.proc_hook] = File(host.native.proc_hook, 0o755)
    if host.native.modprobe is not None:
        out[host.overlay.modprobe] = File(host.native.modprobe, 0o755)
    if host.native.nvidia_smi is not None:
        out[os.path.join(host.overlay.bin, names.NVIDIA_SMI)] = File(host.native.nvidia_smi, 0o755)
    return out


def launcher_commands(host: Host) -> tuple[str, ...]:
    """The Python launchers to stage: nvidia-smi only where NVIDIA's binary is not."""
    if host.native.nvidia_smi is None:
        return launcher.SHIM_COMMANDS
    return tuple(c for c in launcher.SHIM_COMMANDS if c != names.NVIDIA_SMI)


def shim_paths(overlay_root: str, commands: tuple[str, ...] = launcher.SHIM_COMMANDS) -> list[str]:
    """Everything ``launcher.stage`` writes, known before it runs."""
    lib = os.path.join(overlay_root, names.DRIVER_PYLIB_DIR)
    out = []
    for rel, _ in launcher.package_files():
        dest = os.path.join(lib, rel)
        out.append(dest)
        if dest.endswith(".py"):
            out.append(importlib.util.cache_from_source(dest))
    out += [os.path.join(overlay_root, names.DRIVER_BIN_DIR, c) for c in commands]
    return out


class GpuDriver:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()
        self._first = True
        self._commands = launcher_commands(host)
        self._shims = shim_paths(host.overlay.root, self._commands)
        self._publisher = DriverPublisher(host.fs, host.overlay.driver,
                                          host.path(names.RUN_NVIDIA_DRIVER), host.log)

    def stage(self, desired: Desired) -> None:
        if self._first:
            # Runtime overrides belong to the previous run's GPUs: start clean.
            self._drop_overrides()
            self._first = False
        self.host.fs.converge(OWNER, tree(desired, self.host), extra=self._shims,
                              writer=lambda: launcher.stage(self.host.overlay.root, self._commands))
        if self.host.native.cuda_library is not None:
            self._make_process_records()

    def apply(self, desired: Desired) -> None:
        try:
            self._publisher.publish()
            self._readiness.ok()
        except OSError as exc:
            self._readiness.fail(f"cannot publish {names.RUN_NVIDIA_DRIVER}: {exc}")
            raise

    def revoke(self) -> None:
        self._readiness.fail("revoked")
        self._publisher.withdraw()

    def discard(self) -> None:
        # The overrides and process records are written by others into our config dir; they
        # go with the tree.
        self._drop_overrides()
        remove_tree_quiet(self.host.overlay.process_records)
        self.host.fs.remove_owner(OWNER)

    def _drop_overrides(self) -> None:
        remove_tree_quiet(self.host.overlay.overrides)

    def _make_process_records(self) -> None:
        """Where every CUDA process of the node, in any container and of any user, keeps its
        records (native/nvml/api/processes.c): writable by all, sticky as /tmp. Records of live
        processes survive a restage; the directory goes with the tree. A workload can put
        anything at that name (driver/config is writable in its container): what is not
        the agent's own directory is replaced, never followed or chmod-ed."""
        config = os.open(self.host.overlay.driver_config, fsutil.DIR_NOFOLLOW)
        try:
            fsutil.own_dir_at(config, names.PROCESS_RECORDS_DIR, names.PROCESS_RECORDS_MODE)
        finally:
            os.close(config)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
