"""The one place that builds the simulator list and the agent around it."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from mokka.agent.containerd import restart
from mokka.agent.containerd.config import Settings
from mokka.agent.containerd.restart import Restarter
from mokka.agent.containerd.setup import ContainerdSetup
from mokka.agent.containerd.toolkit import Toolkit
from mokka.agent.health import Health
from mokka.agent.hostfs import HostFS
from mokka.agent import native
from mokka.agent.lock import StagingLock
from mokka.agent.loop import Agent
from mokka.agent.manifest import MANIFEST_FILE, Manifest
from mokka.agent.reconciler import Reconciler
from mokka.agent.rootlock import RootLock
from mokka.agent.simulator import Daemon
from mokka.agent.simulators import Host
from mokka.agent.simulators.cri import Cri
from mokka.agent.simulators.fabricmanager import FabricManager
from mokka.agent.simulators.gpudriver import GpuDriver
from mokka.agent.simulators.ib import Ib
from mokka.agent.simulators.imex import Imex
from mokka.agent.simulators.kernellog import KernelLog
from mokka.agent.simulators.kmodules import KernelModules
from mokka.agent.simulators.mig import Mig
from mokka.agent.simulators.mockib import MockIbDaemon
from mokka.agent.simulators.nvlink import NvLink
from mokka.agent.simulators.pcibus import PciBus
from mokka.agent.simulators.processrecords import ProcessRecords
from mokka.agent.source import FileSource
from mokka.core import kmsg
from mokka.core import log as mlog
from mokka.core import names
from mokka.core.overlay import Overlay, host_overlay, under


@dataclass(frozen=True)
class AgentConfig:
    profile: str = names.DEFAULT_PROFILE
    topology: str | None = None
    node_name: str = ""
    host_root: str = "/"
    overlay_host_path: str = names.OVERLAY_HOST_PATH
    #: The host root as the container runtime resolves paths (None: host_root): in a pod the
    #: agent sees the node under /host while containerd sees it at /.
    runtime_host_root: str | None = None
    health_addr: str = names.AGENT_HEALTH_ADDR
    staging_lock_path: str = names.STAGING_LOCK_PATH
    resync_interval: float = 60.0
    shutdown_timeout: float = 30.0
    imex_channels: int = 0
    mig_layout: str = ""              # boot every GPU with MIG on and this layout of the profile
    cdi_spec_dir: str = names.CDI_SPEC_DIR
    nvidia_smi: str | None = None     # NVIDIA's binary to stage instead of the Python shim
    container_runtime: str = names.CONTAINER_RUNTIME_CONTAINERD
    restart_mode: str = names.RESTART_MODE_SYSTEMD
    containerd_config: str = names.CONTAINERD_CONFIG
    containerd_config_dir: str = names.CONTAINERD_CONFIG_DIR
    nri_socket_path: str = names.NRI_SOCKET_PATH   # "" leaves containerd's NRI as it is
    fabricmanager: bool = True
    fabricmanager_delay: float = 0.0
    fabricmanager_fail: bool = False
    kmsg_path: str = names.KMSG_PATH
    ib_tools: str | None = None       # a root holding the IB tools to stage (mokka.agent.ibtools)
    ib_relay_listen: str = ""         # mock-ib's fabric relay (127.0.0.0/8), empty for none
    ib_relay_peers: tuple[str, ...] = ()
    allow_real_driver: bool = False   # stage even where the host root shows a real NVIDIA driver


def runtime_overlay(cfg: AgentConfig) -> Overlay:
    """The staging root as the container runtime names it (what the CDI specs write)."""
    root = cfg.host_root if cfg.runtime_host_root is None else cfg.runtime_host_root
    return host_overlay(root, cfg.overlay_host_path)


def build_host(cfg: AgentConfig, log) -> Host:
    overlay = host_overlay(cfg.host_root, cfg.overlay_host_path)
    manifest = Manifest(os.path.join(overlay.root, MANIFEST_FILE), log)
    return Host(root=cfg.host_root, overlay=overlay, fs=HostFS(manifest, log),
                cdi_dir=under(cfg.host_root, cfg.cdi_spec_dir), log=log,
                native=load_native(cfg), runtime_overlay=runtime_overlay(cfg))


def load_native(cfg: AgentConfig) -> native.NativeFiles:
    """The mock library and shims, and the node-provided binaries the flags name
    (NativeError when one of those cannot be staged)."""
    return native.load(cfg.nvidia_smi, ib_tools=cfg.ib_tools)


def container_runtime(cfg: AgentConfig, host: Host, runner=restart.run,
                      which=shutil.which) -> ContainerdSetup | None:
    if cfg.container_runtime == names.CONTAINER_RUNTIME_NONE:
        return None
    settings = Settings(config=cfg.containerd_config, config_dir=cfg.containerd_config_dir,
                        cdi_spec_dir=cfg.cdi_spec_dir, nri_socket=cfg.nri_socket_path)
    return ContainerdSetup(host.root, settings, host.fs, host.log,
                           Restarter(cfg.restart_mode, host.log, runner),
                           Toolkit(host.root, host.log, which=which, runner=runner))


def simulators(host: Host, cfg: AgentConfig = AgentConfig(),
               runtime: ContainerdSetup | None = None) -> list:
    return [GpuDriver(host), PciBus(host), KernelModules(host), NvLink(host), Imex(host), Ib(host), Cri(host, runtime),
            Mig(host),
            FabricManager(host, delay=cfg.fabricmanager_delay, fail=cfg.fabricmanager_fail,
                          enabled=cfg.fabricmanager),
            KernelLog(host, node_name=node_name(cfg), kmsg_path=under(cfg.host_root, cfg.kmsg_path),
                      record=kmsg.render_record(cfg.kmsg_path, cfg.overlay_host_path)),
            MockIbDaemon(host, cfg.ib_relay_listen, cfg.ib_relay_peers), ProcessRecords(host)]


def node_name(cfg: AgentConfig) -> str:
    """This node's name: ``--node-name``, else the host name (as a kubelet names its node,
    and as ``mokka ctl`` names it): the one name the profile, mock-ib and kernellog use."""
    return cfg.node_name or os.uname().nodename


def root_lock(cfg: AgentConfig) -> RootLock:
    return RootLock(under(cfg.host_root, names.AGENT_LOCK_PATH),
                    homes=(host_overlay(cfg.host_root, cfg.overlay_host_path).root,),
                    anchor=cfg.host_root)


def build_agent(cfg: AgentConfig, log=None, clock=time.monotonic,
                held: RootLock | None = None) -> Agent:
    log = log or mlog.get("mokka.agent")
    host = build_host(cfg, log)
    sims = simulators(host, cfg, container_runtime(cfg, host))
    health = Health(readiness=lambda: ((s.name, *s.ready()) for s in sims),
                    daemons=lambda: ((s.name, s.ready()[0]) for s in sims if isinstance(s, Daemon)),
                    simulators=[s.name for s in sims],
                    notices=lambda: {s.name: n for s in sims if (n := getattr(s, "notice", lambda: None)())})
    lock = StagingLock(under(cfg.host_root, cfg.staging_lock_path))
    source = FileSource(cfg.profile, cfg.topology, node_name(cfg), log,
                        resync_interval=cfg.resync_interval, imex_channels=cfg.imex_channels,
                        mig_layout=cfg.mig_layout)
    return Agent(source=source, reconciler=Reconciler(sims, health, lock, log, clock),
                 health=health, fs=host.fs, lock=lock, log=log, clock=clock, root_lock=held,
                 runtime_dirs=tuple(host.overlay.join(d) for d in names.NODE_CONFIG_DIRS))
