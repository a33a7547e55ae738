"""gpudriver: device nodes, the profile copy and engine state, procfs, the shims;
Apply publishes the driver tree at /run/nvidia/driver.

Every path is a tree entry the converger owns, so a smaller profile removes
the nodes the larger one had. The shim library is written by
``mokka.core.launcher.stage``; its paths are planned here first so the
manifest knows them before they exist.
"""

from __future__ import annotations

import importlib.util
import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import CharDev, Entry, File, unlink_quiet
from mokka.agent.simulators import Host, Readiness
from mokka.agent.simulators.publish import DriverPublisher
from mokka.core import launcher, names

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
    state_json = desired.state_json.encode()
    for config_dir in (ov.driver_config, ov.config):
        out[os.path.join(config_dir, names.PROFILE_FILE)] = File(desired.config_text)
        out[os.path.join(config_dir, names.STATE_FILE)] = File(state_json)
    product = state["gpus"][0].get("name", "") if state["gpus"] else ""
    out[ov.machine_type] = File(f"{product}\n".encode())
    ver = state["system"]["driver_version"]
    out[ov.proc_file(names.PROC_VERSION_FILE)] = File(PROC_VERSION.format(ver=ver).encode())
    out[ov.proc_file(names.PROC_PARAMS_FILE)] = File(PROC_PARAMS.encode())
    return out


def shim_paths(overlay_root: str) -> list[str]:
    """Everything ``launcher.stage`` writes, known before it runs."""
    lib = os.path.join(overlay_root, names.DRIVER_PYLIB_DIR)
    out = []
    for rel, _ in launcher.package_files():
        dest = os.path.join(lib, rel)
        out.append(dest)
        if dest.endswith(".py"):
            out.append(importlib.util.cache_from_source(dest))
    out += [os.path.join(overlay_root, names.DRIVER_BIN_DIR, c) for c in launcher.SHIM_COMMANDS]
    return out


class GpuDriver:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()
        self._first = True
        self._shims = shim_paths(host.overlay.root)
        self._publisher = DriverPublisher(host.fs, host.overlay.driver,
                                          host.path(names.RUN_NVIDIA_DRIVER), host.log)

    def stage(self, desired: Desired) -> None:
        if self._first:
            # Runtime overrides belong to the previous run's GPUs: start clean.
            unlink_quiet(self.host.overlay.overrides)
            self._first = False
        self.host.fs.converge(OWNER, tree(desired, self.host), extra=self._shims,
                              writer=lambda: launcher.stage(self.host.overlay.root))

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
        # overrides.yaml is written by others into our config dir; it goes with the tree.
        unlink_quiet(self.host.overlay.overrides)
        self.host.fs.remove_owner(OWNER)

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
