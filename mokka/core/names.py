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
#: The driver root's config directory, by its name inside the driver root.
DRIVER_CONFIG_NAME = "config"
DRIVER_CONFIG_DIR = f"{DRIVER_DIR}/{DRIVER_CONFIG_NAME}"
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
#: The vendor id verbs report for the mock HCAs (Mellanox's IEEE OUI, as mlx5 does).
IB_VENDOR_OUI = 0x02C9
IMEX_CHANNEL_DIR = "driver/dev/nvidia-caps-imex-channels"
#: A whole /proc/devices the NVIDIA DRA driver's compute-domain plugin can read instead of the
#: kernel's (its chart's ``altProcDevices``, env ALT_PROC_DEVICES_PATH, documents this path):
#: the "Character devices:" section holds the driver's lines (SYS_VIEW_PROC_DEVICES).
IMEX_PROC_DEVICES = "imex/proc-devices"
PCI_SYSFS_DIR = "sys"
#: What a GPU-selected container sees under /sys, staged by the agent (read-only in every
#: container, as the whole overlay is): overlayfs lowers the proc hook
#: (native/hooks/sysview.c) merges over the container's own /sys/devices, /sys/bus and
#: /sys/module, so the kernel's entries stay and the node's GPUs and modules are added.
#:   sysview/gpu/<minor>/devices/<root complex>/<bridges>/<bus id>/...   (the GPU's device
#:       directory, nested in those of the PCIe bridges mokka.core.pcitopo places above it)
#:   sysview/gpu/<minor>/bus/pci/devices/<bus id> -> ../../../devices/<root complex>/<bridges>/<bus id>
#:       (and the same link for each of its bridges)
#:   sysview/module/<name>/{version,refcnt,initstate,coresize,holders/}
#:   sysview/proc-modules: the lines /proc/modules gains (one per module, the kernel's format)
#:   sysview/proc-devices: the char device lines the driver's modules register, which the
#:                         "Character devices:" section of /proc/devices gains
#:   sysview/hca/<n>/devices/<root complex>/<bridges>/<bus id>/...   (HCA mlx5_<n>'s PCI
#:       function, on its GPU's switch)
#:   sysview/hca/<n>/bus/pci/devices/<bus id> -> ../../../devices/<root complex>/<bridges>/<bus id>
#: A GPU is keyed by its minor number: the container's /dev/nvidia<minor> says it may see it.
#: An HCA by its index (mlx5_<n>), 0 up without a gap: the hook merges them all into a GPU
#: container whose environment selects InfiniBand (ENV_IB set, and not IB_OFF).
SYS_VIEW_DIR = "sysview"
SYS_VIEW_GPU_DIR = "gpu"
SYS_VIEW_HCA_DIR = "hca"
SYS_VIEW_DEVICES = "devices"
SYS_VIEW_BUS = "bus"
SYS_VIEW_MODULE_DIR = "module"
SYS_VIEW_PROC_MODULES = "proc-modules"
SYS_VIEW_PROC_DEVICES = "proc-devices"
#: The fabricmanager stand-in's state directory (``fabricmanager.ready`` in it),
#: by its name inside the DRIVER ROOT, beside ``config/``. With no
#: MOCK_FABRICMANAGER_STATE_DIR, the mock NVML library and nvidia-smi look for it
#: relative to the config.yaml they read (``<driver root>/config/config.yaml`` ->
#: ``<driver root>/fabric-state``; native/nvml/engine/node.c), so
#: NRI-injected containers (/opt/nvml-mock/driver/fabric-state, under the overlay
#: mount) and processes that mount only the driver root (/run/nvidia/driver) see
#: it with no variable. It exists only while the agent's fabricmanager daemon
#: runs: no directory means no fabricmanager, and ``state: auto`` reads COMPLETED.
DRIVER_FABRIC_STATE_NAME = "fabric-state"
DRIVER_FABRIC_STATE_DIR = f"{DRIVER_DIR}/{DRIVER_FABRIC_STATE_NAME}"
#: The Go layout's place for it (overlay root): a link to DRIVER_FABRIC_STATE_DIR,
#: found the same way from the device plugin's ``config/config.yaml``.
FABRIC_STATE_DIR = "fabric-state"

#: The node's config directories (config.yaml and the runtime files beside it). Others
#: write into them (``mokka ctl``, ``nvidia-smi -r``, the mock NVML, and containers through
#: the writable bind of driver/config): their whole content goes with the tree at teardown.
NODE_CONFIG_DIRS = (DRIVER_CONFIG_DIR, CONFIG_DIR)

# File names inside driver/config (and config/).
PROFILE_FILE = "config.yaml"          # MOCK_NVML_CONFIG names this one
#: The runtime overrides: a directory beside config.yaml (MOCK_NVML_OVERRIDES names
#: another) with one document per scope, each with its compiled companion:
#: ``all.yaml`` for every GPU, ``gpu<N>.yaml`` for the GPU of physical index N (the
#: profile's order). A document holds the fields it changes, in the shape of a GPU's
#: state. Resetting GPU N removes its two files; nothing ever edits a document in place.
OVERRIDES_DIR = "overrides"
OVERRIDES_ALL_SCOPE = "all"
OVERRIDES_GPU_SCOPE_PREFIX = "gpu"
#: ``lasting-gpu<N>.yaml``: what a reset of GPU N keeps (the aggregate ECC counts and the
#: remapped rows or retired pages ``mokka ctl ecc`` raises), layered under ``gpu<N>.yaml``.
OVERRIDES_LASTING_SCOPE_PREFIX = "lasting-gpu"
MACHINE_TYPE_FILE = "machine-type"
TOPOLOGY_FILE = "topology.yaml"       # the topology copy beside config.yaml
#: Each YAML above has a compiled companion beside it, ``X.yaml`` -> ``X.nvml``
#: (mokka.engine.flatstate), the only files the mock NVML library reads.
NVML_COMPANION_SUFFIX = ".nvml"
#: The command that writes a companion; the library names it when one is missing.
COMPANION_COMMAND = "mokka compile --companion"
#: A companion's kinds (its first line): the compiled state beside config.yaml, the
#: overrides beside overrides.yaml. The ComputeDomain topology document has none: it is
#: applied to the state when that is compiled (mokka/core/topology.py).
STATE_COMPANION_KIND = "state"
OVERRIDES_COMPANION_KIND = "overrides"
#: How a companion spells a list ``L``: its length at ``L.len``, its items at ``L.0``, ``L.1``...
COMPANION_LEN_KEY = "len"
#: The state companion's GPUs: ``gpu.<physical index>.<key>`` (the state's ``gpus``).
COMPANION_GPU_LIST = "gpu"

#: The Xids the agent's kernellog daemon injected, beside config.yaml (so in
#: driver/config, mounted into NRI and CDI containers alike), with its compiled
#: companion ``xid-events.nvml`` (kind ``events``): the channel from kernellog
#: to the mock NVML's nvmlEventSetWait (native/nvml/api/xid.c).
XID_EVENTS_FILE = "xid-events.yaml"
XID_EVENTS_KIND = "events"
#: Its companion's keys: ``last_seq`` (the newest sequence number ever written) and
#: ``event.<n>.seq`` / ``.gpu`` (the physical index) / ``.code`` (the Xid), and for an Xid of
#: a MIG device ``.gi`` (its GPU instance id) and ``.ci`` (its compute instance id), each
#: only when the Xid names it (nvmlEventData_t's 0xFFFFFFFF otherwise).
XID_COMPANION_LAST_SEQ = "last_seq"
XID_COMPANION_EVENTS = "event"
XID_COMPANION_SEQ = "seq"
XID_COMPANION_GPU = "gpu"
XID_COMPANION_CODE = "code"
XID_COMPANION_GI = "gi"
XID_COMPANION_CI = "ci"
#: An event that is no Xid: its NVML event type (1: single bit ECC error, 2: double bit).
XID_COMPANION_TYPE = "type"
#: The kernel log kernellog announces Xids on (a host path; --kmsg-path).
KMSG_PATH = "/dev/kmsg"
#: The agent records that kernel log and the overlay's place, both as host paths before
#: --host-root (JSON: ``{"kmsg": "/dev/kmsg", "overlay": "/var/lib/nvml-mock"}``), in this
#: file of the driver root, so ``mokka ctl xid`` writes its line where the staged node keeps
#: its kernel log and nowhere else: a scratch root's, never the host's. Not in ``config/``:
#: workloads mount the driver root read-only but ``config/`` writable, and the record says
#: where a command run as root may write.
KMSG_RECORD_NAME = "kernel-log"
DRIVER_KMSG_RECORD = f"{DRIVER_DIR}/{KMSG_RECORD_NAME}"

#: mig.nvml (MIG_STATE_FILE), the node's MIG partitions, as the mock library writes it
#: (native/nvml/mig/mig_file.c): a companion with no YAML twin, of kind "mig", changed under the
#: config directory's flock.
MIG_STATE_KIND = "mig"
#: Its lines: ``gpu.<physical index>.mode <current> <pending>``, ``.uuid <GPU UUID>``,
#: ``.gi.<id> <profile ID> <start>:<size>`` and ``.gi.<id>.ci.<id> <profile ID> <start>:<size>``.
MIG_STATE_GPUS = "gpu"
MIG_STATE_MODE = "mode"
MIG_STATE_UUID = "uuid"
MIG_STATE_GPU_INSTANCE = "gi"
MIG_STATE_COMPUTE_INSTANCE = "ci"
#: Its largest accepted size: 64 GPUs with 7 instances each take about 40 KiB.
MIG_STATE_MAX_BYTES = 256 * 1024
#: How long a MIG change waits for the config directory's lock (a workload can hold it:
#: the change then fails with In Use instead of hanging). Long enough that no change
#: starves behind many processes changing MIG at once (each holds it about a millisecond).
MIG_LOCK_WAIT_MS = 10000

#: settings.nvml (SETTINGS_STATE_FILE), what NVML's setters set on the node's GPUs (power
#: limit, persistence and compute mode, application and locked clocks, ECC mode, the drain
#: state of nvmlDeviceModifyDrainState), as the mock
#: library writes it (native/nvml/engine/settings_file.c): a companion with no YAML twin, of
#: kind "settings", changed under the config directory's flock (MIG_LOCK_WAIT_MS) beside
#: mig.nvml. A GPU reset drops the GPU's lines but its ECC mode (the pending one becomes current):
#: a drained GPU leaves the drain state, as the reset re-initializes it.
SETTINGS_STATE_KIND = "settings"
#: Its lines, each ``gpu.<physical index>.<setting> <value>``: ``power_limit_mw <mW>``,
#: ``persistence``, ``accounting`` (0 or 1), ``compute_mode`` (nvmlComputeMode_t), ``ecc <current>
#: <pending>``, ``applications_clocks <memory> <graphics>``, ``locked_clocks <min> <max>`` and
#: ``memory_locked_clocks <min> <max>`` (MHz), ``drain 1`` (a drained GPU; leaving the drain
#: state drops the line), and ``uuid <GPU UUID>``.
#: Then ``applications_clocks_restricted 0|1`` (nvmlDeviceSetAPIRestriction for application
#: clocks; absent: restricted, root only), ``ecc_cleared_volatile`` and ``ecc_cleared_aggregate``
#: (nvmlDeviceClearEccErrorCounts: the counts at the clearing, 16 of them in settings_file.c's
#: order, which every reader subtracts; a reset keeps the aggregate one), and
#: ``nvlink_errors_cleared.<link> <replay> <recovery> <crc_flit> <crc_data> <ecc_data>``
#: (nvmlDeviceResetNvLinkErrorCounters: the link's error counters at the reset, which every
#: reader subtracts; written only for a link with one above 0; a GPU reset drops them, as it
#: clears the counters).
SETTINGS_STATE_GPUS = "gpu"
SETTINGS_STATE_UUID = "uuid"
SETTINGS_STATE_POWER_LIMIT = "power_limit_mw"
SETTINGS_STATE_PERSISTENCE = "persistence"
SETTINGS_STATE_ACCOUNTING = "accounting"
SETTINGS_STATE_COMPUTE_MODE = "compute_mode"
SETTINGS_STATE_ECC = "ecc"
SETTINGS_STATE_APPLICATIONS_CLOCKS = "applications_clocks"
SETTINGS_STATE_LOCKED_CLOCKS = "locked_clocks"
SETTINGS_STATE_MEMORY_LOCKED_CLOCKS = "memory_locked_clocks"
SETTINGS_STATE_DRAIN = "drain"
#: ``clock_vf_offsets <graphics> <memory>``: the clocks' VF offsets in MHz, signed
#: (nvmlDeviceSetGpcClkVfOffset, nvmlDeviceSetMemClkVfOffset); absent, both 0.
SETTINGS_STATE_CLOCK_VF_OFFSETS = "clock_vf_offsets"
#: The VF offsets a board allows either clock, in MHz either way (nvmlDeviceGet*ClkMinMaxVfOffset):
#: Mokka's choice for every board, within what NVIDIA's drivers offer boards that take offsets.
CLOCK_VF_OFFSET_LIMIT_MHZ = 1000
SETTINGS_STATE_APP_CLOCKS_RESTRICTED = "applications_clocks_restricted"
SETTINGS_STATE_ECC_CLEARED_VOLATILE = "ecc_cleared_volatile"
SETTINGS_STATE_ECC_CLEARED_AGGREGATE = "ecc_cleared_aggregate"
SETTINGS_STATE_NVLINK_ERRORS_CLEARED = "nvlink_errors_cleared"
#: Its largest accepted size: 64 GPUs with every setting at its longest take about 206 KiB
#: (the NVLink resets, 18 links of 5 counts each, and the two ECC clearings are most of it).
SETTINGS_STATE_MAX_BYTES = 256 * 1024

FABRICMANAGER_READY = "fabricmanager.ready"
#: ``mokka fabricmanager`` re-asserts its marker this often (seconds), as nv-fabricmanager's stand-in does.
FABRICMANAGER_REASSERT_S = 2.0

#: Procfs entries of the mock driver, under DRIVER_PROC_DIR.
PROC_VERSION_FILE = "version"
PROC_PARAMS_FILE = "params"
PROC_IMEX_MGMT_CAPABILITY = "capabilities/fabric-imex-mgmt"
#: Each GPU's directory under DRIVER_PROC_DIR (named by its sysfs bus id, 0000:3b:00.0) and
#: the file in it the driver writes (Model, IRQ, GPU UUID, Video BIOS, ... Device Minor).
PROC_GPUS_DIR = "gpus"
PROC_GPU_INFORMATION = "information"
#: The staged /proc/driver: what a container the proc hook serves sees there (every
#: directory in it; DRIVER_PROC_DIR is its ``nvidia``).
DRIVER_PROC_ROOT = "driver/proc/driver"
#: The nvidia-caps module's proc directory, under DRIVER_PROC_ROOT, and its MIG file:
#: one ``<capability path> <minor>`` line per capability the driver numbers.
PROC_CAPS_DIR_NAME = "nvidia-caps"
PROC_MIG_MINORS_FILE = "mig-minors"
#: MIG capabilities, under DRIVER_PROC_DIR: the node-wide two, and each GPU instance's and
#: compute instance's ``access`` (``capabilities/gpu<minor>/mig/gi<g>/ci<c>/access``).
PROC_MIG_CAPABILITY_DIR = "capabilities/mig"
PROC_MIG_CONFIG = "config"
PROC_MIG_MONITOR = "monitor"
PROC_MIG_ACCESS = "access"

#: GPU fabric states (GetGpuFabricInfo) and their numeric codes; a profile may
#: also say "auto" (follow the fabricmanager marker: completed once it is ready,
#: in progress before) or leave it empty (completed).
FABRIC_STATE_NOT_SUPPORTED = "not_supported"
FABRIC_STATE_NOT_STARTED = "not_started"
FABRIC_STATE_IN_PROGRESS = "in_progress"
FABRIC_STATE_COMPLETED = "completed"
FABRIC_STATE_CODES = {FABRIC_STATE_NOT_SUPPORTED: 0, FABRIC_STATE_NOT_STARTED: 1,
                      FABRIC_STATE_IN_PROGRESS: 2, FABRIC_STATE_COMPLETED: 3}
FABRIC_STATE_AUTO = "auto"
FABRIC_STATE_DEFAULT = FABRIC_STATE_COMPLETED
#: A GPU's ``platform.peer_type``: whether an NVSwitch joins it to its NVLink peers
#: (nvmlPlatformInfo's peerType 1 and 0).
PLATFORM_PEER_SWITCH_CONNECTED = "switch_connected"
PLATFORM_PEER_DIRECT_CONNECTED = "direct_connected"
#: What a GPU's ``refused`` block can make a reading answer instead of its value:
#: the NVML error a real board's library gave for it (nvidia-smi prints the error's
#: text, "Requested functionality has been deprecated" or "Insufficient
#: Permissions"; NOT_SUPPORTED prints N/A).
REFUSAL_DEPRECATED = "deprecated"
REFUSAL_NO_PERMISSION = "no_permission"
REFUSAL_NOT_SUPPORTED = "not_supported"
REFUSALS = (REFUSAL_DEPRECATED, REFUSAL_NO_PERMISSION, REFUSAL_NOT_SUPPORTED)
#: The words of ``addressing_mode`` (nvmlDeviceAddressingModeType_t 0, 1, 2).
ADDRESSING_MODES = ("none", "hmm", "ats")
#: The words of ``pcie.atomic_caps_inbound`` / ``_outbound``, in the order of their bits
#: (NVML_PCIE_ATOMICS_CAP_FETCHADD32 is bit 0), as nvidia-smi prints them.
PCIE_ATOMIC_CAPS = ("FETCHADD_32", "FETCHADD_64", "SWAP_32", "SWAP_64", "CAS_32", "CAS_64", "CAS_128")
#: A GPU's state key ``mokka ctl set GPU lost=true`` sets (overrides): the mock NVML
#: answers GPU_IS_LOST for it, the Python nvidia-smi cannot get its handle.
STATE_LOST_KEY = "failure.lost"
#: What NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reports (nvmlDeviceGpuRecoveryAction_t, in its
#: order: NONE is 0), as a GPU's ``failure.recovery_action`` spells it (a profile, or
#: ``mokka ctl set GPU recovery_action=gpu_reset``); none given: NONE.
GPU_RECOVERY_ACTIONS = ("none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset")
#: An NVLink of the compiled state (``nvlink_links[]``): its state (active when it
#: names none) and what its remote end is (compile fills in NVSwitch ends).
NVLINK_STATE_ACTIVE = "active"
NVLINK_REMOTE_SWITCH = "switch"
NVLINK_REMOTE_GPU = "gpu"
NVLINK_REMOTE_IBMNPU = "ibmnpu"

# --- Device numbers ----------------------------------------------------------

NVIDIA_MAJOR = 195                    # /dev/nvidiaN is 195:N
NVIDIACTL_MINOR = 255
UVM_MAJOR = 510                       # dynamic on a real kernel: never evidence
UVM_MINOR = 0
UVM_TOOLS_MINOR = 1
IMEX_CHANNEL_MAJOR = 235
#: The nvidia-caps char devices (/proc/devices: ``nvidia-caps``; dynamic on a real kernel):
#: the IMEX management capability and the MIG capabilities, ``nvidia-caps/nvidia-cap<minor>``.
NVIDIA_CAPS_MAJOR = 236
IMEX_CAPS_MAJOR = NVIDIA_CAPS_MAJOR
#: The NVLink core's and the NVSwitch driver's char devices (/proc/devices: ``nvidia-nvlink``,
#: ``nvidia-nvswitch``), which the nvidia module registers on every 64-bit load, switches or
#: not. Dynamic on a real kernel; these are majors real nodes show them at. No node file is
#: staged for either: the driver makes none by itself.
NVLINK_MAJOR = 234
NVSWITCH_MAJOR = 511
IMEX_CHANNEL_COUNT = 2048
IMEX_CAPS_MGMT_MINOR = 512
DEVICE_FILE_MODE = 0o666
MAX_GPUS = 64
#: HCAs a node may have (infiniband.hca_count, or GPUs x hcas_per_gpu): with MAX_GPUS, all
#: of them find a free bus number in one PCI domain (mokka.core.hcapci), and the proc
#: hook's overlay of every GPU and HCA view fits in mount(2)'s one page of options.
MAX_HCAS = 128

#: Where device nodes appear inside a container (and on a host): /dev/nvidia0, /dev/nvidiactl.
CONTAINER_DEV_DIR = "/dev"
GPU_NODE_PREFIX = "nvidia"            # nvidia0 .. nvidiaN-1
#: nvidia-modeset's minor under the nvidia module's major.
MODESET_MINOR = 254
#: The control nodes that come with every GPU: (name under /dev, major, minor). nvidia-modeset
#: is one of them as NVIDIA's container toolkit has it (its CDI specs list the node in the
#: edits every device shares), and the GPU Operator's validator would otherwise mknod it in
#: the driver root.
CONTROL_DEVICES = (
    ("nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR),
    ("nvidia-modeset", NVIDIA_MAJOR, MODESET_MINOR),
    ("nvidia-uvm", UVM_MAJOR, UVM_MINOR),
    ("nvidia-uvm-tools", UVM_MAJOR, UVM_TOOLS_MINOR),
)
CONTROL_NODES = tuple(name for name, _, _ in CONTROL_DEVICES)
IMEX_CHANNEL_PREFIX = "channel"
#: The nvidia-caps nodes: /dev/nvidia-caps/nvidia-cap<minor> (staged under DEV_DIR).
NVIDIA_CAPS_DEV_NAME = "nvidia-caps"
NVIDIA_CAPS_DIR = f"{DEV_DIR}/{NVIDIA_CAPS_DEV_NAME}"
NVIDIA_CAP_PREFIX = "nvidia-cap"
#: The driver's MIG capability numbering (mig-minors): config 1, monitor 2, then for GPU
#: minor m (m < MIG_MINORS_GPUS) and GPU instance g (g < MIG_GPU_INSTANCE_IDS):
#: gpu<m>/gi<g> is FIRST + PER_GPU*m + PER_GI*g, and its compute instance c
#: (c < MIG_COMPUTE_INSTANCE_IDS) that + 1 + c.
MIG_CAP_CONFIG_MINOR = 1
MIG_CAP_MONITOR_MINOR = 2
MIG_CAP_FIRST_MINOR = 3
MIG_CAP_MINORS_PER_GPU = 135
MIG_CAP_MINORS_PER_GI = 9
MIG_MINORS_GPUS = 32
MIG_GPU_INSTANCE_IDS = 15
MIG_COMPUTE_INSTANCE_IDS = 8
#: Modes of the MIG capability nodes and proc files: config is root's alone, the rest readable.
MIG_CONFIG_MODE = 0o400
MIG_CAP_MODE = 0o444
#: The node-wide MIG partition state (modes set at run time, GPU and compute instances),
#: kept by the mock NVML library itself in DRIVER_CONFIG_DIR beside config.yaml. The
#: agent removes it, and every file there whose name starts with it or with "." and it
#: (a lock, a temp file), when the node boots and at teardown.
MIG_STATE_FILE = "mig.nvml"
#: The node-wide settings of NVML's setters, kept by the mock library beside mig.nvml and
#: removed with it (the same prefixes) when the node boots and at teardown: a reboot
#: loses them as it does on a real node.
SETTINGS_STATE_FILE = "settings.nvml"


def gpu_node_name(index: int) -> str:
    return f"{GPU_NODE_PREFIX}{index}"


def overrides_scope_file(physical_index: int | None) -> str:
    """``gpu3.yaml`` for physical GPU 3, ``all.yaml`` for None (every GPU)."""
    scope = OVERRIDES_ALL_SCOPE if physical_index is None else f"{OVERRIDES_GPU_SCOPE_PREFIX}{physical_index}"
    return scope + ".yaml"


def overrides_lasting_file(physical_index: int) -> str:
    """``lasting-gpu3.yaml``: what a reset of physical GPU 3 keeps."""
    return f"{OVERRIDES_LASTING_SCOPE_PREFIX}{physical_index}.yaml"


# --- The build ---------------------------------------------------------------

#: The architectures the native libraries are built for (native/build.py) and that a
#: zipapp can carry (mokka/_native/<arch>/).
NATIVE_ARCHES = ("x86_64", "aarch64")
#: Which of them ./shivfile and native/build.py build: unset or "host" this machine's,
#: "all" every one of NATIVE_ARCHES, or one of them by name.
ENV_ARCHES = "MOKKA_ARCHES"
ARCHES_HOST = "host"
ARCHES_ALL = "all"


# --- Environment variables inside containers and of the shims ---------------

#: Every Mokka command's logging options (mokka/cmd/common.py); the agent passes them to its daemons.
ENV_LOG_LEVEL = "MOKKA_LOG_LEVEL"
ENV_LOG_FORMAT = "MOKKA_LOG_FORMAT"
ENV_NVML_CONFIG = "MOCK_NVML_CONFIG"
ENV_NVML_OVERRIDES = "MOCK_NVML_OVERRIDES"
ENV_NVML_VISIBLE_DEVICES = "MOCK_NVML_VISIBLE_DEVICES"
ENV_PCI_ROOT = "MOCK_PCI_ROOT"
ENV_GFD_MACHINE_TYPE_FILE = "GFD_MACHINE_TYPE_FILE"
ENV_NODE_NAME = "NODE_NAME"
ENV_TOPOLOGY_CONFIG = "MOCK_TOPOLOGY_CONFIG"
ENV_FABRICMANAGER_STATE_DIR = "MOCK_FABRICMANAGER_STATE_DIR"
#: What the mock NVML library tells Mokka's own clients beyond NVML's API
#: (nvmlMokkaGetNodePath's first argument; native/nvml/api/private.c).
NODE_PATH_PROFILE = 0
NODE_PATH_OVERRIDES = 1
NODE_PATH_XID_EVENTS = 2
#: Pins the clock of the moving readings (integer seconds since the epoch); unset: the real time.
ENV_NVML_CLOCK = "MOCK_NVML_CLOCK"
#: ``dynamic_metrics.utilization.pattern`` (native/nvml/engine/dynamic.c).
DYNAMIC_PATTERN_IDLE = "idle"
DYNAMIC_PATTERN_BUSY = "busy"
DYNAMIC_PATTERN_BURST = "burst"
DYNAMIC_PATTERN_STEADY = "steady"
DYNAMIC_BURST_PERIOD_DEFAULT_SEC = 30
DYNAMIC_PATTERNS = (DYNAMIC_PATTERN_IDLE, DYNAMIC_PATTERN_BUSY, DYNAMIC_PATTERN_BURST,
                    DYNAMIC_PATTERN_STEADY)
#: ``mokka fabricmanager``'s other flags (Go Mokka's names where it had one).
ENV_FABRICMANAGER_DELAY = "MOCK_FABRICMANAGER_INIT_DELAY_SEC"
ENV_FABRICMANAGER_FAIL = "MOKKA_FABRICMANAGER_FAIL"
ENV_FABRICMANAGER_INTERVAL = "MOKKA_FABRICMANAGER_INTERVAL"
ENV_IB = "MOCK_IB"
ENV_IB_ROOT = "MOCK_IB_ROOT"
ENV_IB_PING_SOCKET = "MOCK_IB_PING_SOCKET"
#: mock-ib's fabric relay: comma-separated ADDR:PORT of peer relays, and the default port.
ENV_IB_PEERS = "MOCK_IB_PEERS"
IB_RELAY_PORT = 18515
#: The frames of run/mock-ib.sock (libibmockumad <-> mock-ib; mokka/ib/wire.py, native/ib/umad.c):
#: a 4-byte big-endian length, a 1-byte type, the payload. Requests, then answers.
IB_WIRE_OPEN = 0x01
IB_WIRE_REGISTER = 0x02
IB_WIRE_UNREGISTER = 0x03
IB_WIRE_SEND = 0x04
IB_WIRE_QUERY_PORT = 0x05
IB_WIRE_QUERY_CA = 0x06
IB_WIRE_QUERY_CAS = 0x07
IB_WIRE_OPENED = 0x81
IB_WIRE_RECV = 0x84
IB_WIRE_PORT = 0x85
IB_WIRE_CA = 0x86
IB_WIRE_CAS = 0x87
IB_WIRE_MAX_FRAME = 8192
ENV_DEV_ROOT = "MOCK_NVML_DEV_ROOT"   # prefix of the /dev the library looks at (mokka env: the staged one)
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

#: MOCK_IB tiers: off (the IB shims do nothing), sysfs (paths only: sysfs and
#: /dev/infiniband rewritten into MOCK_IB_ROOT), full (also umad and verbs).
IB_OFF = "off"
IB_SYSFS = "sysfs"
IB_FULL = "full"
#: What an InfiniBand-selected container gets (nri-plugin --infiniband-tier).
IB_TIERS = (IB_FULL, IB_SYSFS)
VISIBLE_NONE = "none"
VISIBLE_ALL = "all"
#: The NVIDIA Container Toolkit's NVIDIA_VISIBLE_DEVICES word for "the driver, no
#: GPU" (the toolkit's CDI spec sets it); MOCK_NVML_VISIBLE_DEVICES takes it as none.
VISIBLE_VOID = "void"

# --- Pod annotations (pod-scoped) -------------------------------------------

ANNOTATION_DOMAIN = "nvml-mock.nvidia.com"
ANNOTATION_OPT_OUT = "nvml-mock.nvidia.com/inject"
ANNOTATION_DEVICES = "nvml-mock.nvidia.com/devices"
ANNOTATION_INFINIBAND = "nvml-mock.nvidia.com/infiniband"
ANNOTATION_IMEX_CHANNELS = "nvml-mock.nvidia.com/imex-channels"
#: containerd 1.7 passes CDI devices requested through CRI as these annotations.
CDI_CRI_ANNOTATION_PREFIX = "cdi.k8s.io/"
#: nvidia-container-toolkit's NRI annotations, first present wins.
TOOLKIT_CDI_ANNOTATION = "nvidia.cdi.k8s.io"
TOOLKIT_CDI_ANNOTATION_POD = "nvidia.cdi.k8s.io/pod"
TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX = "nvidia.cdi.k8s.io/container."
#: The node label (value "true") a node carries to run the chart's DaemonSets: Mokka
#: restarts a node's containerd and binds the mock at /run/nvidia/driver, so it runs only
#: where a user opted in.
NODE_OPT_IN_LABEL = "nvml-mock.nvidia.com/enabled"

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
#: The MIG devices of the toolkit's kind (CDI_KIND_GPU), in their own spec: they come and
#: go with the partitions, which the node agent renders as NVML reports them.
CDI_SPEC_MIG_FILE = "nvidia-mig.yaml"
CDI_DEVICE_ALL = "all"
CDI_MOCK_DEVICE_ALL = f"{CDI_KIND_MOCK}={CDI_DEVICE_ALL}"
#: Where the toolkit's CDI spec mounts the config directory inside a container.
CDI_CONFIG_MOUNT = "/etc/nvml-mock"
NVIDIA_SMI = "nvidia-smi"                   # the command, staged in driver/usr/bin
CDI_NVIDIA_SMI_MOUNT = f"/usr/bin/{NVIDIA_SMI}"
CDI_PYLIB_MOUNT = "/usr/lib/mokka"
CDI_NVML_LIB_MOUNT = "/usr/lib64/libnvidia-ml.so.1"
NVML_LIB_FILE = "libnvidia-ml.so.1"        # the soname; a link to the versioned file
NVML_LIB_DEV_LINK = "libnvidia-ml.so"       # nvtop dlopens this name first
NVML_LIB_VERSIONED = "libnvidia-ml.so.{driver_version}"   # the file itself, as a driver ships it
#: The mock CUDA driver (native/cuda), staged beside the NVML library in the same way.
CUDA_LIB_FILE = "libcuda.so.1"             # the soname cudart, numba and cuda-bindings dlopen
CUDA_LIB_DEV_LINK = "libcuda.so"           # what a program links with -lcuda (numba tries it first)
CUDA_LIB_VERSIONED = "libcuda.so.{driver_version}"
CDI_CUDA_LIB_MOUNT = "/usr/lib64/libcuda.so.1"
#: The CUDA driver's environment: which devices a process sees, and in which order.
ENV_CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
ENV_CUDA_DEVICE_ORDER = "CUDA_DEVICE_ORDER"
#: EAGER asks cuModuleGetLoadingMode for eager loading (lazy is the default since CUDA 12.2).
ENV_CUDA_MODULE_LOADING = "CUDA_MODULE_LOADING"
CUDA_MODULE_LOADING_EAGER = "EAGER"
CUDA_ORDER_FASTEST_FIRST = "FASTEST_FIRST"
CUDA_ORDER_PCI_BUS_ID = "PCI_BUS_ID"
#: The compute processes of the node: a directory beside config.yaml (so in driver/config,
#: writable in NRI containers; the CDI spec mounts it writable), mode 01777 as /tmp is. Each
#: user's CUDA processes keep their records in its own directory ``processes/<uid>``, owned
#: by that uid and writable by it alone, so what one user writes costs no reader the records
#: of another. Every CUDA process keeps one record per GPU it holds a context on, named
#: ``<physical index>.<token>``, written by the mock NVML library (native/nvml/api/processes.c)
#: and locked for the process's life; NVML counts a record only while its lock is held.
PROCESS_RECORDS_DIR = "processes"
PROCESS_RECORDS_MODE = 0o1777
PROCESS_RECORDS_USER_MODE = 0o755
#: The private table NVIDIA's nvidia-smi 550 asks nvmlInternalGetExportTable for: its
#: 16-byte id as the bytes it passes, and the slots Mokka's nvidia-smi calls too
#: (native/nvml/api/export_table.c says what each does).
NVML_EXPORT_TABLE_ID = (0xC4, 0xFE, 0x3E, 0x6C, 0xC9, 0x8F, 0x6C, 0x4E,
                        0xA3, 0x27, 0xEE, 0x69, 0x6E, 0x12, 0xF7, 0xC4)
NVML_EXPORT_SLOT_TOPO_LINK_LEVEL = 22
NVML_EXPORT_SLOT_RESET = 167
#: The longest path the mock library hands back (its buffers).
PATH_MAX = 4096

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
IB_UMAD_LIB_FILE = "libibmockumad.so.1"
IB_VERBS_LIB_FILE = "libibmockverbs.so.1"
IB_SYS_LIB_FILE = "libibmocksys.so.1"
FS_LIB_FILE = "libmockfs.so.1"
LD_PRELOAD_SHIMS = tuple(f"{PRELOAD_LIB_DIR}/{file}" for file in (
    IB_UMAD_LIB_FILE, IB_VERBS_LIB_FILE, IB_SYS_LIB_FILE, FS_LIB_FILE))

#: The proc hook (native/hooks/prochook.c): the NRI plugin gives GPU-selected containers this
#: static helper as an OCI createContainer hook. It runs in the container's mount namespace
#: before pivot_root and mounts the staged driver proc files (DRIVER_PROC_ROOT) at
#: /proc/driver, and the driver's lines into /proc/modules, where runc refuses OCI mounts.
#: Its arguments: the overlay's host path (the hook resolves in the runtime's namespace).
PROC_HOOK_FILE = "nvml-mock-proc-hook"
DRIVER_LIBEXEC_DIR = "driver/usr/libexec/nvml-mock"
PROC_HOOK_PATH = f"{DRIVER_LIBEXEC_DIR}/{PROC_HOOK_FILE}"
#: Seconds the runtime gives the hook (it kills it after that; the hook itself never waits).
PROC_HOOK_TIMEOUT_S = 5

#: The driver root's modprobe (native/driverroot/modprobe.c). NVIDIA's GPU Operator validator
#: loads the modules with ``chroot /run/nvidia/driver /sbin/modprobe nvidia`` (nvidia-uvm,
#: nvidia-modeset) when the driver root has its own ``dev/``: a static stand-in (a driver
#: root has no libc to offer) that loads nothing and answers from the driver root's own
#: /proc/modules, which the agent stages with the profile's loaded modules.
MODPROBE_FILE = "nvml-mock-modprobe"
DRIVER_MODPROBE_PATH = "driver/sbin/modprobe"
#: The driver root's /proc/modules (what the stand-in reads inside the chroot, at
#: MODPROBE_LOADED): the same lines a GPU container's /proc/modules gains.
DRIVER_PROC_MODULES = "driver/proc/modules"
MODPROBE_LOADED = "/proc/modules"
#: Where modprobe says it looked for a module it does not have (then the kernel's release).
MODPROBE_MODULES_DIR = "/lib/modules"
#: The driver root's own sysfs PCI tree (the GPUs as under ``sys/``): the validator lists
#: ``<driver root>/sys/bus/pci/devices`` to know which /dev/char links to make.
DRIVER_SYSFS_DIR = "driver/sys"

# --- Container runtime setup (the cri simulator's containerd half) ----------------

CONTAINER_RUNTIME_CONTAINERD = "containerd"
CONTAINER_RUNTIME_NONE = "none"
CONTAINER_RUNTIMES = (CONTAINER_RUNTIME_CONTAINERD, CONTAINER_RUNTIME_NONE)
RESTART_MODE_SYSTEMD = "systemd"
RESTART_MODE_NONE = "none"
RESTART_MODES = (RESTART_MODE_SYSTEMD, RESTART_MODE_NONE)
#: Host paths (joined under --host-root to write them; written into containerd's
#: configuration as they are, because containerd reads them on the host).
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
CONTAINERD_CONFIG_DIR = "/etc/containerd/conf.d"
#: Mokka's file in that dir; the host's config.toml imports the dir's *.toml.
CONTAINERD_DROP_IN_FILE = "50-mokka.toml"
CONTAINERD_IMPORT_GLOB = "*.toml"
#: The binary whose presence on the host's PATH (DEFAULT_PATH, under --host-root)
#: says the node runs containerd; absent: CRI-O, k3s, rke2 — left alone.
CONTAINERD_BINARY = "containerd"
#: How the agent restarts containerd (systemd mode), and queues a restart on Revoke.
CONTAINERD_RESTART_COMMAND = ("systemctl", "restart", "containerd")
CONTAINERD_QUEUE_RESTART_COMMAND = ("systemctl", "restart", "--no-block", "containerd")
#: containerd's plugin ids: CRI (config version 2, containerd 1.7; version 3, 2.x), NRI.
CONTAINERD_CRI_PLUGIN_V2 = "io.containerd.grpc.v1.cri"
CONTAINERD_CRI_PLUGIN_V3 = "io.containerd.cri.v1.runtime"
CONTAINERD_NRI_PLUGIN = "io.containerd.nri.v1.nri"
#: What those plugins are called in a version 1 configuration (containerd 1.7 migrates).
CONTAINERD_V1_PLUGIN_NAMES = {CONTAINERD_CRI_PLUGIN_V2: "cri", CONTAINERD_NRI_PLUGIN: "nri"}
#: containerd's own cdi_spec_dirs when a configuration names none.
CONTAINERD_DEFAULT_CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
#: The NVIDIA Container Toolkit release the image may carry (found as nvidia-ctk
#: on the agent's PATH, the other two beside it), and where it is installed.
TOOLKIT_BINARIES = ("nvidia-container-runtime", "nvidia-ctk", "nvidia-cdi-hook")
TOOLKIT_CTK = "nvidia-ctk"
TOOLKIT_RUNTIME = "nvidia-container-runtime"
TOOLKIT_INSTALL_DIR = "/usr/local/nvml-mock/toolkit"
#: The package paths: links into TOOLKIT_INSTALL_DIR. A file there that is not
#: such a link means another installer prepared the node: left alone.
TOOLKIT_PACKAGE_BIN_DIR = "/usr/bin"
TOOLKIT_RUNTIME_CONFIG = "/etc/nvidia-container-runtime/config.toml"
TOOLKIT_RUNTIME_CONFIG_FILE = "config.toml"     # in TOOLKIT_INSTALL_DIR
TOOLKIT_HANDLER = "nvidia"

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
#: ``system.identity``: a GPU's UUID, serial, board id and NVLink cluster UUID are derived
#: from the node name the profile is compiled for (per-node), or stand as the profile
#: writes them (fixed: a capture replayed on its own node).
IDENTITY_PER_NODE = "per-node"
IDENTITY_FIXED = "fixed"
IDENTITY_MODES = (IDENTITY_PER_NODE, IDENTITY_FIXED)

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

# --- Bounds on what the mock NVML library reads (native/nvml/engine/flat.c, kinds.c) ---
# Every file in driver/config is writable by every injected container, so each
# companion is hostile input: a file past its bound is refused unread. The bounds
# are about 10x what a real node produces; flatstate.render refuses to write more.

#: The state companion: 64 GPUs of the largest built-in profile compile to 1.2 MB in
#: 26 700 lines (one GPU: about 19 KB, 420 lines).
MAX_STATE_COMPANION_BYTES = 16 * 1024 * 1024
MAX_STATE_COMPANION_LINES = 1 << 19
#: One overrides document holds fields of one GPU's state (all of them: 19 KB, 420 lines),
#: and a node may have 65 of them loaded at once (every GPU's and ``all``).
MAX_OVERRIDES_COMPANION_BYTES = 64 * 1024
MAX_OVERRIDES_COMPANION_LINES = 2048
#: The Xid events document: its writers keep the injections of the profile (one per
#: GPU at most) and those of ``mokka ctl xid`` since, up to MAX_XID_EVENTS.
MAX_EVENTS_COMPANION_BYTES = 256 * 1024
MAX_EVENTS_COMPANION_LINES = 4096
MAX_XID_EVENTS = 1024
#: The largest Xid sequence number (and last_seq) a reader takes: exact in every JSON
#: reader, and a node injecting a million Xids a second would take 285 years to reach it.
#: A document past it is refused; its writer starts the numbering again.
MAX_XID_SEQ = 2**53 - 1
#: What NVML allows: NVML_NVLINK_MAX_LINKS links per GPU (nvml.h; checked at build time).
MAX_NVLINK_LINKS = 18
#: Processes one GPU lists: each holds a context of a few hundred MiB of device memory,
#: so even a 192 GB GPU runs fewer than this many.
MAX_GPU_PROCESSES = 1024
#: CPU numbers in a cpu_affinity list: Linux's largest NR_CPUS (x86_64 MAXSMP).
MAX_CPUS = 8192
