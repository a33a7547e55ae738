"""The one place that builds the simulator list and the agent around it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from mokka.agent.health import Health
from mokka.agent.hostfs import HostFS
from mokka.agent import native
from mokka.agent.lock import StagingLock
from mokka.agent.loop import Agent
from mokka.agent.manifest import MANIFEST_FILE, Manifest
from mokka.agent.reconciler import Reconciler
from mokka.agent.rootlock import RootLock
from mokka.agent.simulators import Host
from mokka.agent.simulators.cri import Cri
from mokka.agent.simulators.gpudriver import GpuDriver
from mokka.agent.simulators.imex import Imex
from mokka.agent.simulators.nvlink import NvLink
from mokka.agent.simulators.pcibus import PciBus
from mokka.agent.source import FileSource
from mokka.core import log as mlog
from mokka.core import names
from mokka.core.overlay import host_overlay, under


@dataclass(frozen=True)
class AgentConfig:
    profile: str = names.DEFAULT_PROFILE
    topology: str | None = None
    node_name: str = ""
    host_root: str = "/"
    overlay_host_path: str = names.OVERLAY_HOST_PATH
    health_addr: str = names.AGENT_HEALTH_ADDR
    staging_lock_path: str = names.STAGING_LOCK_PATH
    resync_interval: float = 60.0
    shutdown_timeout: float = 30.0
    imex_channels: int = 0
    cdi_spec_dir: str = names.CDI_SPEC_DIR
    nvidia_smi: str | None = None     # NVIDIA's binary to stage instead of the Python shim


def build_host(cfg: AgentConfig, log) -> Host:
    overlay = host_overlay(cfg.host_root, cfg.overlay_host_path)
    manifest = Manifest(os.path.join(overlay.root, MANIFEST_FILE), log)
    return Host(root=cfg.host_root, overlay=overlay, fs=HostFS(manifest, log),
                cdi_dir=under(cfg.host_root, cfg.cdi_spec_dir), log=log,
                native=native.load(cfg.nvidia_smi))


def simulators(host: Host) -> list:
    return [GpuDriver(host), PciBus(host), NvLink(host), Imex(host), Cri(host)]


def root_lock(cfg: AgentConfig) -> RootLock:
    return RootLock(under(cfg.host_root, names.AGENT_LOCK_PATH),
                    homes=(host_overlay(cfg.host_root, cfg.overlay_host_path).root,),
                    anchor=cfg.host_root)


def build_agent(cfg: AgentConfig, log=None, clock=time.monotonic,
                held: RootLock | None = None) -> Agent:
    log = log or mlog.get("mokka.agent")
    host = build_host(cfg, log)
    sims = simulators(host)
    health = Health(readiness=lambda: ((s.name, *s.ready()) for s in sims))
    lock = StagingLock(under(cfg.host_root, cfg.staging_lock_path))
    source = FileSource(cfg.profile, cfg.topology, cfg.node_name, log,
                        resync_interval=cfg.resync_interval, imex_channels=cfg.imex_channels)
    return Agent(source=source, reconciler=Reconciler(sims, health, lock, log, clock),
                 health=health, fs=host.fs, lock=lock, log=log, clock=clock, root_lock=held)
