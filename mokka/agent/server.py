"""The agent's probe endpoint (/healthz, /readyz, /stagedz, /metrics) on --health-addr."""

from __future__ import annotations

from mokka.agent.health import Health
from mokka.core import probes


class ProbeServer(probes.ProbeServer):
    def __init__(self, addr: str, health: Health):
        parsed = probes.parse_addr(addr)
        if parsed is None:
            raise ValueError("probes are disabled (empty --health-addr)")
        routes = {"/healthz": health.healthz, "/readyz": health.readyz, "/stagedz": health.stagedz,
                  "/metrics": health.metrics}
        super().__init__(parsed[0], parsed[1], routes, name="agent-probes")
