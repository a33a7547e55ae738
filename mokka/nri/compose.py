"""The NRI plugin's composition root: settings in, a serving plugin out.

The one place that builds the staging gate, the node view, the request
pipeline, the probes and the driver, and wires them together. Everything is
imported when the plugin starts, not when ``mokka.cmd.nri`` parses its flags.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:       # protobuf loads only when the plugin runs
    from mokka.nri.inject.model import Config
    from mokka.nri.plugin import PluginConfig


@dataclass(frozen=True)
class HostPaths:
    """Host-side paths the gate checks before each decision (not the decision's)."""
    devices: str
    topology: str
    cdi_spec: str
    imex_channels: str


@dataclass(frozen=True)
class Settings:
    config: "Config"
    plugin: "PluginConfig"
    host: HostPaths
    health_addr: str
    agent_staged_url: str
    staging_lock_path: str


def make_handler(settings: Settings, metrics=None):
    """(handler, gate_ready): the request pipeline behind the staging gate."""
    from mokka.nri import pipeline
    from mokka.nri.gate import StagingGate
    from mokka.nri.nodeview import NodeViewBuilder

    gate = StagingGate(settings.agent_staged_url, settings.staging_lock_path)
    views = NodeViewBuilder.for_config(
        settings.config, device_host_path=settings.host.devices,
        imex_channel_host_path=settings.host.imex_channels,
        topology_host_path=settings.host.topology, cdi_spec_host_path=settings.host.cdi_spec)
    # Scan the staged tree (and parse its CDI specs) now, not in the first
    # container's CreateContainer: that first call would otherwise pay ~25 ms.
    views.build()
    handler = pipeline.handler(settings.config, views, gate,
                               pipeline.NoMetrics() if metrics is None else metrics)
    return handler, lambda: tuple(gate.ready())


def serve(settings: Settings) -> int | str:
    """Run the plugin until SIGTERM or SIGINT: 0, or one line saying why it cannot start."""
    from mokka.nri import health as healthmod
    from mokka.nri.plugin import Plugin, keep_large_buffers_out_of_the_heap

    keep_large_buffers_out_of_the_heap()

    from mokka.nri.gate import OUTCOMES
    from mokka.nri.inject.skip import LABELS

    health = healthmod.Health(
        skip_reasons=(*LABELS.values(), healthmod.SKIPPED_NOT_STAGED), gate_outcomes=OUTCOMES)
    handler, gate_ready = make_handler(settings, health)
    health.gate_ready = gate_ready
    try:
        probes = healthmod.serve(settings.health_addr, health)
    except OSError as exc:
        return f"cannot serve probes on {settings.health_addr!r}: {exc}"
    plugin = Plugin(settings.plugin, handler, health=health)
    # Everything loaded so far lives as long as the process: keep it out of
    # the collector's full passes, which otherwise walk every protobuf and
    # click object every few hundred requests.
    import gc
    gc.freeze()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: plugin.stop())
    try:
        plugin.run()
    finally:
        if probes is not None:
            probes.stop()
    return 0
