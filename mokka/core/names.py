"""Every shared fact of Mokka, in one place.

Paths here are overlay-relative (joined under a host root or a container mount
path by ``mokka.core.overlay``); annotation keys, env names, device numbers, CDI
kinds, ports and defaults are the contract between the node agent, the NRI
plugin, the shims, the chart and the docs. Nothing else spells these literals:
import them, in tests too, so a rename fails loudly.

This module must stay import-light (stdlib only): nvidia-smi imports it on
every call.
"""

from __future__ import annotations

# --- Roots -----------------------------------------------------------------

#: Where the node agent stages the mock tree on the host.
OVERLAY_HOST_PATH = "/var/lib/nvml-mock"
#: Where the NRI plugin mounts that tree inside a container.
OVERLAY_MOUNT_PATH = "/opt/nvml-mock"
#: Where the GPU Operator validator and DRA driver look for a driver root.
RUN_NVIDIA_DRIVER = "/run/nvidia/driver"
#: CDI spec directory containerd reads by default.
CDI_SPEC_DIR = "/var/run/cdi"
#: Node Feature Discovery local feature file (makes NFD label pci-10de.present).
NFD_FEATURE_FILE = "/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features"
NFD_FEATURE_LINE = "pci-10de.present=true"
#: Default staging lock shared by the agent (exclusive) and the plugin (shared).
STAGING_LOCK_PATH = "/run/mokka/staging.lock"
#: One node agent per host root: held (flock) for the agent's whole life, the holder's pid
#: inside. Outside the overlay (workloads see the overlay, and could hold a lock there) and
#: outside the staging lock's per-pod emptyDir: every agent pod on a node must see the same file.
AGENT_LOCK_PATH = "/var/lib/mokka/node-agent.lock"

# --- Overlay-relative layout ----------------------------------------------

DRIVER_DIR = "driver"
DEV_DIR = "driver/dev"
DRIVER_CONFIG_DIR = "driver/config"
DRIVER_BIN_DIR = "driver/usr/bin"
DRIVER_LIB_DIR = "driver/usr/lib64"
PRELOAD_LIB_DIR = "driver/usr/local/lib"
#: The unpacked Mokka package the staged shims run from. It sits at ../lib/mokka
#: from driver/usr/bin, so a launcher bind-mounted alone at /usr/bin/nvidia-smi
#: (the CDI spec does this) finds it at /usr/lib/mokka.
DRIVER_PYLIB_DIR = "driver/usr/lib/mokka"
DRIVER_PROC_DIR = "driver/proc/driver/nvidia"
#: The device plugin's canonical copy of the profile (Go Mokka layout).
CONFIG_DIR = "config"
TOPOLOGY_DIR = "topology"
TOPOLOGY_DOC = "topology/topology.yaml"
IB_DIR = "ib"
#: The mock HCAs, one directory each, under IB_DIR (what ibstat enumerates).
IB_CLASS_DIR = "ib/sys/class/infiniband"
IB_PING_SOCKET = "run/mock-ib.sock"
IMEX_CHANNEL_DIR = "driver/dev/nvidia-caps-imex-channels"
IMEX_PROC_DEVICES = "imex/proc-devices"
PCI_SYSFS_DIR = "sys"
FABRIC_STATE_DIR = "fabric-state"

# File names inside driver/config (and config/).
PROFILE_FILE = "config.yaml"          # MOCK_NVML_CONFIG names this one
STATE_FILE = "state.json"             # the compiled engine state beside it
OVERRIDES_FILE = "overrides.yaml"
MACHINE_TYPE_FILE = "machine-type"
TOPOLOGY_FILE = "topology.yaml"       # the topology copy beside config.yaml
#: Each YAML above has a compiled companion beside it, ``X.yaml`` -> ``X.nvml``
#: (mokka.core.flatstate), the only files the mock NVML library reads.
NVML_COMPANION_SUFFIX = ".nvml"
#: The command that writes a companion; the library names it when one is missing.
COMPANION_COMMAND = "mokka compile --companion"

FABRICMANAGER_READY = "fabricmanager.ready"

#: Procfs entries of the mock driver, under DRIVER_PROC_DIR.
PROC_VERSION_FILE = "version"
PROC_PARAMS_FILE = "params"
PROC_IMEX_MGMT_CAPABILITY = "capabilities/fabric-imex-mgmt"

#: GPU fabric states (GetGpuFabricInfo) and their numeric codes; a profile may
#: also say "auto" (follow the fabricmanager marker) or leave it empty (completed).
FABRIC_STATE_CODES = {"not_supported": 0, "not_started": 1, "in_progress": 2, "completed": 3}
FABRIC_STATE_AUTO = "auto"
FABRIC_STATE_DEFAULT = "completed"

# --- Device numbers ----------------------------------------------------------

NVIDIA_MAJOR = 195                    # /dev/nvidiaN is 195:N
NVIDIACTL_MINOR = 255
UVM_MAJOR = 510                       # dynamic on a real kernel: never evidence
UVM_MINOR = 0
UVM_TOOLS_MINOR = 1
IMEX_CHANNEL_MAJOR = 235
IMEX_CAPS_MAJOR = 236
IMEX_CHANNEL_COUNT = 2048
IMEX_CAPS_MGMT_MINOR = 512
DEVICE_FILE_MODE = 0o666
MAX_GPUS = 64

GPU_NODE_PREFIX = "nvidia"            # nvidia0 .. nvidiaN-1
#: The control nodes that come with every GPU: (name under /dev, major, minor).
CONTROL_DEVICES = (
    ("nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR),
    ("nvidia-uvm", UVM_MAJOR, UVM_MINOR),
    ("nvidia-uvm-tools", UVM_MAJOR, UVM_TOOLS_MINOR),
)
CONTROL_NODES = tuple(name for name, _, _ in CONTROL_DEVICES)
IMEX_CHANNEL_PREFIX = "channel"


def gpu_node_name(index: int) -> str:
    return f"{GPU_NODE_PREFIX}{index}"


# --- Environment variables inside containers and of the shims ---------------

ENV_NVML_CONFIG = "MOCK_NVML_CONFIG"
ENV_NVML_OVERRIDES = "MOCK_NVML_OVERRIDES"
ENV_NVML_VISIBLE_DEVICES = "MOCK_NVML_VISIBLE_DEVICES"
ENV_PCI_ROOT = "MOCK_PCI_ROOT"
ENV_GFD_MACHINE_TYPE_FILE = "GFD_MACHINE_TYPE_FILE"
ENV_NODE_NAME = "NODE_NAME"
ENV_TOPOLOGY_CONFIG = "MOCK_TOPOLOGY_CONFIG"
ENV_FABRICMANAGER_STATE_DIR = "MOCK_FABRICMANAGER_STATE_DIR"
ENV_IB = "MOCK_IB"
ENV_IB_ROOT = "MOCK_IB_ROOT"
ENV_IB_PING_SOCKET = "MOCK_IB_PING_SOCKET"
ENV_DEV_ROOT = "MOCK_NVML_DEV_ROOT"   # test hook: prefix for /dev/nvidiaN visibility checks
#: Test hook: the process exits (status FAULT_EXIT_STATUS, no cleanup, as a kill -9 would
#: leave it) at its Nth file write, after the temp file and before the rename.
ENV_FAULT_AFTER_WRITES = "MOKKA_TEST_FAULT_AFTER_WRITES"
FAULT_EXIT_STATUS = 86
ENV_PATH = "PATH"
#: PATH when a container sets none: the OCI/containerd default, so an image
#: relying on it keeps finding its binaries behind the overlay's.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENV_LD_LIBRARY_PATH = "LD_LIBRARY_PATH"
ENV_LD_PRELOAD = "LD_PRELOAD"
ENV_NVIDIA_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
ENV_CDI_DEVICE_SOURCE = "NVML_MOCK_DEVICE_SOURCE"

IB_OFF = "off"
IB_FULL = "full"
VISIBLE_NONE = "none"
VISIBLE_ALL = "all"

# --- Pod annotations (pod-scoped) -------------------------------------------

ANNOTATION_DOMAIN = "nvml-mock.nvidia.com"
ANNOTATION_OPT_OUT = "nvml-mock.nvidia.com/inject"
ANNOTATION_DEVICES = "nvml-mock.nvidia.com/devices"
ANNOTATION_INFINIBAND = "nvml-mock.nvidia.com/infiniband"
ANNOTATION_IMEX_CHANNELS = "nvml-mock.nvidia.com/imex-channels"
#: containerd 1.7 passes CDI devices requested through CRI as these annotations.
CDI_CRI_ANNOTATION_PREFIX = "cdi.k8s.io/"
#: nvidia-container-toolkit's NRI annotations (seed 003), first present wins.
TOOLKIT_CDI_ANNOTATION = "nvidia.cdi.k8s.io"
TOOLKIT_CDI_ANNOTATION_POD = "nvidia.cdi.k8s.io/pod"
TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX = "nvidia.cdi.k8s.io/container."

# --- CDI ---------------------------------------------------------------------

CDI_VERSION = "0.6.0"
CDI_KIND_GPU = "nvidia.com/gpu"                       # the toolkit's kind
CDI_KIND_MOCK = "nvml-mock.nvidia.com/gpu"            # ours, for NRI cdi mode
CDI_KIND_MANAGEMENT = "management.nvidia.com/gpu"     # GPU Operator operands
CDI_KIND_DEVICE_PLUGIN = "k8s.device-plugin.nvidia.com/gpu"   # allocation evidence
CDI_KIND_DRA_CLAIM = "k8s.gpu.nvidia.com/claim"               # allocation evidence
CDI_SPEC_GPU_FILE = "nvidia.yaml"
CDI_SPEC_MOCK_FILE = "nvml-mock-nri.yaml"
CDI_SPEC_MANAGEMENT_FILE = "nvml-mock-management.yaml"
CDI_DEVICE_ALL = "all"
CDI_MOCK_DEVICE_ALL = f"{CDI_KIND_MOCK}={CDI_DEVICE_ALL}"
#: Where the toolkit's CDI spec mounts the config directory inside a container.
CDI_CONFIG_MOUNT = "/etc/nvml-mock"
CDI_NVIDIA_SMI_MOUNT = "/usr/bin/nvidia-smi"
CDI_PYLIB_MOUNT = "/usr/lib/mokka"
CDI_NVML_LIB_MOUNT = "/usr/lib64/libnvidia-ml.so.1"
NVML_LIB_FILE = "libnvidia-ml.so.1"        # the soname; a link to the versioned file
NVML_LIB_DEV_LINK = "libnvidia-ml.so"       # nvtop dlopens this name first
NVML_LIB_VERSIONED = "libnvidia-ml.so.{driver_version}"   # the file itself, as a driver ships it

# --- Ports and NRI defaults --------------------------------------------------

AGENT_HEALTH_ADDR = ":9091"
NRI_HEALTH_ADDR = ":8080"
NRI_SOCKET_PATH = "/var/run/nri/nri.sock"
NRI_PLUGIN_NAME = "mokka-nri-plugin"
NRI_PLUGIN_INDEX = "10"
NRI_EXCLUDED_NAMESPACES = ("kube-system",)
NRI_REQUEST_TIMEOUT_FALLBACK_S = 2.0
DEVICE_INJECTION_MODES = ("raw", "cdi")

#: LD_PRELOAD shims, overlay-relative, in preload order (IB umad, IB verbs,
#: IB sysfs, then the PCI/fs shim). Only the staged ones are ever appended.
LD_PRELOAD_SHIMS = (
    f"{PRELOAD_LIB_DIR}/libibmockumad.so.1",
    f"{PRELOAD_LIB_DIR}/libibmockverbs.so.1",
    f"{PRELOAD_LIB_DIR}/libibmocksys.so.1",
    f"{PRELOAD_LIB_DIR}/libmockfs.so.1",
)

# --- Feature gates -----------------------------------------------------------

GATE_IMEX_DOWNLOAD = "IMEXDownload"
GATE_TOOLKIT_CDI_ANNOTATIONS = "ToolkitCDIAnnotations"
#: name -> default. Unknown names are an error.
FEATURE_GATES = {
    GATE_IMEX_DOWNLOAD: False,
    GATE_TOOLKIT_CDI_ANNOTATIONS: False,
}

# --- Profiles ----------------------------------------------------------------

DEFAULT_PROFILE = "gb300"
BUILTIN_PROFILES = ("a100", "h100", "b200", "gb200", "gb300", "l40s", "t4")
STATE_SCHEMA_VERSION = 1

# --- Bounds on what a profile (or any YAML document Mokka reads) may cost ----

#: Largest profile or topology file read; a longer file is refused unread.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
#: Deepest nesting of mappings and lists (the built-in profiles use 6).
MAX_DOCUMENT_DEPTH = 32
#: Nodes of a document counted with every alias expanded, checked before anything is built
#: (the built-in profiles have about 2 000 with 8 GPUs; a full 64-GPU profile about 20 000).
MAX_DOCUMENT_NODES = 100_000
#: Nodes of the compiled state: device_defaults is copied into every GPU, so a profile whose
#: defaults times its GPU count exceeds this is refused before compiling.
MAX_STATE_NODES = 1_000_000
