"""The kernel modules a Mokka node says it has loaded: one table, and what follows from it.

NVIDIA's GPU Operator validator (``lsmod``), mig-parted (``/proc/modules``) and the device
plugin look for these modules; the agent stages ``/sys/module/<name>``, the
``/proc/modules`` lines and the char devices the modules register (the validator reads their
majors from ``/proc/devices``) from this table. nvidia, nvidia_uvm and nvidia_modeset are always
loaded; the others where the profile declares them in ``system.kernel_modules``, and
mlx5_core also where the profile has InfiniBand HCAs (a node with ConnectX HCAs loads it).

Pure: functions of the profile's declaration and the compiled state only.
"""

from __future__ import annotations

from dataclasses import dataclass

from mokka.core import names

#: Where a module's ``version`` comes from when it is not the driver's own.
DRIVER = "driver"


@dataclass(frozen=True)
class Module:
    name: str
    coresize: int          # bytes, as lsmod's Size column shows it
    uses: tuple = ()       # the table's modules this one links against (its holders' side)
    version: str = DRIVER  # DRIVER: the profile's system.driver_version
    chardevs: tuple = ()   # (major, first minor, name): the char device regions it registers


# The char device regions the NVIDIA driver's modules register, as its source names them
# (NVIDIA's open-gpu-kernel-modules, the same calls since 545, where the one 195 region
# "nvidia-frontend" became "nvidia" and "nvidiactl"; every profile's driver is newer):
# nvidia.ko registers "nvidia" (major 195, minors from 0) and "nvidiactl" (195, minor 255)
# in kernel-open/nvidia/nv.c, and at every load "nvidia-caps" (nv-caps.c), "nvidia-nvlink"
# (nvlink_linux.c) and "nvidia-nvswitch" (linux_nvswitch.c); nvidia-modeset.ko
# "nvidia-modeset" (195, minor 254, nvidia-modeset-linux.c); nvidia-uvm.ko "nvidia-uvm"
# (nvidia-uvm/uvm.c). nv-caps-imex.c's "nvidia-caps-imex-channels" is listed only where the
# node has IMEX channels, so /proc/devices and /dev agree.
NVIDIA_CHARDEVS = (
    (names.NVIDIA_MAJOR, 0, "nvidia"),
    (names.NVIDIA_MAJOR, names.NVIDIACTL_MINOR, "nvidiactl"),
    (names.NVLINK_MAJOR, 0, "nvidia-nvlink"),
    (names.NVIDIA_CAPS_MAJOR, 0, names.NVIDIA_CAPS_DEV_NAME),
    (names.NVSWITCH_MAJOR, 0, "nvidia-nvswitch"),
)
NVIDIA_IMEX_CHANNELS = (names.IMEX_CHANNEL_MAJOR, 0, "nvidia-caps-imex-channels")


# In load order (modprobe loads a module's dependencies first). Sizes are what lsmod shows for
# these modules on x86_64 with a 550-series driver. Versions other than the driver's are public
# releases: gdrdrv as GDRCopy 2.4 reports it (GDRDRV_VERSION_STRING, major.minor), nvidia_fs
# as NVIDIA's gds-nvidia-fs 2.20.5 release, mlx5_core as NVIDIA's MLNX_OFED 24.10-1.1.4 (the
# in-tree mlx5_core has no version file; the OFED one the GPU Operator pairs with has).
TABLE = (
    Module("mlx5_core", 2453504, version="24.10-1.1.4"),      # at boot, before the driver
    Module("nvidia", 56954880, chardevs=NVIDIA_CHARDEVS),
    Module("nvidia_modeset", 1306624, uses=("nvidia",),
           chardevs=((names.NVIDIA_MAJOR, names.MODESET_MINOR, "nvidia-modeset"),)),
    Module("nvidia_uvm", 1540096, uses=("nvidia",), chardevs=((names.UVM_MAJOR, 0, "nvidia-uvm"),)),
    Module("nvidia_drm", 126976, uses=("nvidia_modeset",)),
    Module("nvidia_peermem", 16384, uses=("nvidia",)),
    Module("gdrdrv", 24576, uses=("nvidia",), version="2.4"),
    Module("nvidia_fs", 262144, version="2.20.5"),
)
BY_NAME = {m.name: m for m in TABLE}
NAMES = tuple(BY_NAME)
ALWAYS = ("nvidia", "nvidia_modeset", "nvidia_uvm")
#: Loaded by default on a profile with InfiniBand HCAs.
WITH_INFINIBAND = ("mlx5_core",)
#: What ``system.kernel_modules`` may name (the always-loaded ones too: naming them is harmless).
DECLARABLE = tuple(sorted(NAMES))
#: /proc/modules prints a module's address as 0 to a reader without CAP_SYSLOG (kptr_restrict).
ADDRESS = "0x0000000000000000"
LIVE = "Live"


def loaded(declared, infiniband: bool) -> tuple[str, ...]:
    """The node's modules in load order: the three always, then what the profile declares
    (``declared``: names the schema checked) and mlx5_core with InfiniBand, and whatever
    those use."""
    wanted = set(ALWAYS) | {str(n).lower() for n in declared or ()}
    if infiniband:
        wanted |= set(WITH_INFINIBAND)
    todo = list(wanted)
    while todo:
        for dep in BY_NAME[todo.pop()].uses:
            if dep not in wanted:
                wanted.add(dep)
                todo.append(dep)
    return tuple(m.name for m in TABLE if m.name in wanted)


def holders(name: str, modules: tuple[str, ...]) -> tuple[str, ...]:
    """The loaded modules that use ``name``, the last loaded first (the kernel puts each new
    user at the head of the list /proc/modules prints)."""
    return tuple(m for m in reversed(modules) if name in BY_NAME[m].uses)


def version(name: str, driver_version: str) -> str:
    v = BY_NAME[name].version
    return driver_version if v == DRIVER else v


def refcnt(name: str, modules: tuple[str, ...]) -> int:
    """The number of users: as on a node where no process holds the device files open."""
    return len(holders(name, modules))


def proc_line(name: str, modules: tuple[str, ...]) -> str:
    """One /proc/modules line: ``name size refcnt users state address`` (each user followed
    by a comma, ``-`` when none)."""
    used_by = "".join(f"{u}," for u in holders(name, modules)) or "-"
    return f"{name} {BY_NAME[name].coresize} {refcnt(name, modules)} {used_by} {LIVE} {ADDRESS}\n"


def proc_modules(modules: tuple[str, ...]) -> str:
    """The /proc/modules lines of ``modules``: the last loaded first, as the kernel lists them."""
    return "".join(proc_line(m, modules) for m in reversed(modules))


def proc_devices_file(char_lines: str) -> str:
    """A whole /proc/devices with ``char_lines`` (``proc_devices``) as its character section
    and an empty block section: what a reader given a substitute path expects."""
    return f"Character devices:\n{char_lines}\nBlock devices:\n"


def proc_devices(modules: tuple[str, ...], imex_channels: bool) -> str:
    """The ``Character devices:`` lines of /proc/devices the loaded ``modules`` register (the
    IMEX channels' too when the node has channels): ``%3d %s``, by major and, within one, by
    first minor, as the kernel's chrdev_show prints them."""
    regions = [r for m in modules for r in BY_NAME[m].chardevs]
    if imex_channels and "nvidia" in modules:
        regions.append(NVIDIA_IMEX_CHANNELS)
    return "".join(f"{major:3d} {name}\n" for major, _, name in sorted(regions))
