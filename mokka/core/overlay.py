"""The overlay tree: every join of a root with a path of ``mokka.core.names``.

``Overlay(root)`` answers "where is X" for one root: the host staging root
(``/var/lib/nvml-mock``, or that under a scratch ``--host-root``) or the
container mount path (``/opt/nvml-mock``). The NRI plugin, the node agent and
the shims all ask this class; none of them joins a literal path by hand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mokka.core import names
from mokka.core.mig import cap_node_name


def under(host_root: str, path: str) -> str:
    """Root an absolute host path under ``host_root`` (``/`` leaves it as is)."""
    if not host_root or host_root == "/":
        return path
    return os.path.join(host_root, path.lstrip("/"))


@dataclass(frozen=True)
class Overlay:
    root: str

    def join(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    # Directories
    @property
    def driver(self) -> str:
        return self.join(names.DRIVER_DIR)

    @property
    def dev(self) -> str:
        return self.join(names.DEV_DIR)

    @property
    def driver_config(self) -> str:
        return self.join(names.DRIVER_CONFIG_DIR)

    @property
    def config(self) -> str:
        return self.join(names.CONFIG_DIR)

    @property
    def bin(self) -> str:
        return self.join(names.DRIVER_BIN_DIR)

    @property
    def lib(self) -> str:
        return self.join(names.DRIVER_LIB_DIR)

    @property
    def pylib(self) -> str:
        return self.join(names.DRIVER_PYLIB_DIR)

    @property
    def preload_lib(self) -> str:
        return self.join(names.PRELOAD_LIB_DIR)

    @property
    def proc(self) -> str:
        return self.join(names.DRIVER_PROC_DIR)

    @property
    def ib(self) -> str:
        return self.join(names.IB_DIR)

    @property
    def imex_channels(self) -> str:
        return self.join(names.IMEX_CHANNEL_DIR)

    @property
    def sys(self) -> str:
        return self.join(names.PCI_SYSFS_DIR)

    @property
    def sysview(self) -> str:
        """``sysview``: the /sys view the proc hook merges into GPU containers (names.SYS_VIEW_DIR)."""
        return self.join(names.SYS_VIEW_DIR)

    def sysview_gpu(self, minor: int) -> str:
        """``sysview/gpu/<minor>``: one GPU's lowers (its ``devices`` and ``bus`` trees)."""
        return os.path.join(self.sysview, names.SYS_VIEW_GPU_DIR, str(minor))

    def sysview_hca(self, index: int) -> str:
        """``sysview/hca/<index>``: one HCA's lowers (its ``devices`` and ``bus`` trees)."""
        return os.path.join(self.sysview, names.SYS_VIEW_HCA_DIR, str(index))

    @property
    def sysview_modules(self) -> str:
        """``sysview/module``: the lower of /sys/module (one directory per loaded module)."""
        return os.path.join(self.sysview, names.SYS_VIEW_MODULE_DIR)

    @property
    def sysview_proc_modules(self) -> str:
        """``sysview/proc-modules``: the lines /proc/modules gains."""
        return os.path.join(self.sysview, names.SYS_VIEW_PROC_MODULES)

    @property
    def imex_proc_devices(self) -> str:
        """``imex/proc-devices``: a whole /proc/devices for ALT_PROC_DEVICES_PATH readers."""
        return self.join(names.IMEX_PROC_DEVICES)

    @property
    def sysview_proc_devices(self) -> str:
        """``sysview/proc-devices``: the char device lines /proc/devices gains."""
        return os.path.join(self.sysview, names.SYS_VIEW_PROC_DEVICES)

    @property
    def driver_sys(self) -> str:
        """``driver/sys``: the driver root's own PCI tree (names.DRIVER_SYSFS_DIR)."""
        return self.join(names.DRIVER_SYSFS_DIR)

    # Files
    @property
    def profile(self) -> str:
        """The staged profile copy: what MOCK_NVML_CONFIG names."""
        return os.path.join(self.driver_config, names.PROFILE_FILE)

    @property
    def overrides(self) -> str:
        """The runtime overrides directory beside the profile copy."""
        return os.path.join(self.driver_config, names.OVERRIDES_DIR)

    @property
    def process_records(self) -> str:
        """The node's CUDA process records, beside the profile copy (names.PROCESS_RECORDS_DIR)."""
        return os.path.join(self.driver_config, names.PROCESS_RECORDS_DIR)

    @property
    def machine_type(self) -> str:
        return os.path.join(self.driver_config, names.MACHINE_TYPE_FILE)

    @property
    def fabric_state(self) -> str:
        """The fabricmanager state dir, inside the driver root (names.DRIVER_FABRIC_STATE_NAME)."""
        return self.join(names.DRIVER_FABRIC_STATE_DIR)

    @property
    def fabric_state_link(self) -> str:
        """The Go layout's ``fabric-state`` at the overlay root, a link to ``fabric_state``."""
        return self.join(names.FABRIC_STATE_DIR)

    @property
    def fabric_ready(self) -> str:
        return os.path.join(self.fabric_state, names.FABRICMANAGER_READY)

    @property
    def kmsg_record(self) -> str:
        """The agent's record of its kernel log (names.DRIVER_KMSG_RECORD)."""
        return self.join(names.DRIVER_KMSG_RECORD)

    @property
    def topology(self) -> str:
        return self.join(names.TOPOLOGY_DOC)

    @property
    def ib_ping_socket(self) -> str:
        return self.join(names.IB_PING_SOCKET)

    def gpu_node(self, minor: int) -> str:
        """``dev/nvidiaN``: N is the GPU's minor number (the index unless a profile says otherwise)."""
        return os.path.join(self.dev, names.gpu_node_name(minor))

    def control_node(self, name: str) -> str:
        return os.path.join(self.dev, name)

    @property
    def caps(self) -> str:
        """``dev/nvidia-caps``: the MIG (and IMEX management) capability nodes."""
        return self.join(names.NVIDIA_CAPS_DIR)

    def cap_node(self, minor: int) -> str:
        return os.path.join(self.caps, cap_node_name(minor))

    @property
    def proc_root(self) -> str:
        """``driver/proc/driver``: the staged /proc/driver the proc hook mounts."""
        return self.join(names.DRIVER_PROC_ROOT)

    @property
    def proc_caps(self) -> str:
        """``driver/proc/driver/nvidia-caps``: the nvidia-caps module's proc files."""
        return os.path.join(self.proc_root, names.PROC_CAPS_DIR_NAME)

    @property
    def mig_state(self) -> str:
        """The library's node-wide MIG partition state beside config.yaml."""
        return os.path.join(self.driver_config, names.MIG_STATE_FILE)

    @property
    def proc_hook(self) -> str:
        return self.join(names.PROC_HOOK_PATH)

    @property
    def modprobe(self) -> str:
        """The driver root's ``sbin/modprobe`` stand-in (names.DRIVER_MODPROBE_PATH)."""
        return self.join(names.DRIVER_MODPROBE_PATH)

    @property
    def driver_proc_modules(self) -> str:
        """The driver root's ``proc/modules``: what its modprobe knows as loaded."""
        return self.join(names.DRIVER_PROC_MODULES)

    def proc_file(self, name: str) -> str:
        """An entry of the mock driver's procfs (``names.PROC_*``)."""
        return os.path.join(self.proc, name)

    def proc_gpu_information(self, bus_id: str) -> str:
        """``driver/proc/driver/nvidia/gpus/<bus id>/information`` (bus id as sysfs names it)."""
        return os.path.join(self.proc, names.PROC_GPUS_DIR, bus_id, names.PROC_GPU_INFORMATION)

    def imex_channel(self, index: int) -> str:
        return os.path.join(self.imex_channels, f"{names.IMEX_CHANNEL_PREFIX}{index}")

    def shim(self, rel_or_abs: str) -> str:
        """A preload shim path: relative ones resolve against this root."""
        return rel_or_abs if os.path.isabs(rel_or_abs) else self.join(rel_or_abs)


def host_overlay(host_root: str = "/", overlay_host_path: str = names.OVERLAY_HOST_PATH) -> Overlay:
    return Overlay(under(host_root, overlay_host_path))


def container_overlay(mount_path: str = names.OVERLAY_MOUNT_PATH) -> Overlay:
    return Overlay(mount_path)


# --- The container environment contract (facts §0) ---------------------------

def gpu_env(mount: Overlay, *, pci_tree: bool = True) -> dict[str, str]:
    """Variables that turn mock NVML on inside a container (GPU selection).

    ``pci_tree``: MOCK_PCI_ROOT too, which aims libmockfs at the node's whole staged
    PCI tree (every GPU and HCA): only for a process no proc hook gives its own /sys view."""
    env = {names.ENV_NVML_CONFIG: mount.profile}
    if pci_tree:
        env[names.ENV_PCI_ROOT] = mount.root
    env[names.ENV_GFD_MACHINE_TYPE_FILE] = mount.machine_type
    return env


def topology_env(node_name: str, topology_mount_path: str) -> dict[str, str]:
    return {
        names.ENV_NODE_NAME: node_name,
        names.ENV_TOPOLOGY_CONFIG: topology_mount_path,
    }


def ib_env(mount: Overlay, tier: str = names.IB_FULL) -> dict[str, str]:
    """Variables that turn the mock InfiniBand stack on (IB selection): ``full`` (sysfs,
    umad and verbs) or ``sysfs`` (the sysfs and /dev/infiniband paths only)."""
    return {
        names.ENV_IB: tier,
        names.ENV_IB_ROOT: mount.ib,
        names.ENV_IB_PING_SOCKET: mount.ib_ping_socket,
    }
