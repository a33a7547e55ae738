"""The node's mock HCAs as mock-ib looks them up (by name, LID, GUID, GID); pure.

The identities (GUIDs, LIDs, SM LID, node_desc) come from ``mokka.core.infiniband``,
the one home of those rules, which the ib simulator's sysfs tree follows too.
This module adds only what the wire needs: numeric port states and the
width/speed codes of a PortInfo.
"""

from __future__ import annotations

from dataclasses import dataclass

from mokka.core import infiniband as ibm
from mokka.core import names
from mokka.core.infiniband import Hca

NODE_TYPE_CA = 1
GID_PREFIX = 0xFE80000000000000       # link-local subnet prefix of gids/0
MELLANOX_VENDOR_ID = names.IB_VENDOR_OUI    # NodeInfo.VendorID, as verbs reports it
CONNECTX7_DEVICE_ID = ibm.MLX_DEVICE
PORT_ACTIVE = ibm.PORT_STATES["ACTIVE"]


class FabricError(ValueError):
    pass


def port_state(hca: Hca) -> int:
    return ibm.PORT_STATES.get(hca.port_state, PORT_ACTIVE)


def phys_state(hca: Hca) -> int:
    return ibm.PHYS_STATES.get(hca.phys_state, ibm.PHYS_STATES["LinkUp"])


def gid(hca: Hca) -> bytes:
    return GID_PREFIX.to_bytes(8, "big") + hca.port_guid.to_bytes(8, "big")


def rate_code(rate_gbps: int) -> tuple[int, int, int]:
    """(LinkWidthActive, LinkSpeedActive, LinkSpeedExtActive) of a 4x link at ``rate_gbps``."""
    per_lane = rate_gbps / 4
    ext = {100: 8, 50: 4, 25: 2, 14: 1}          # NDR, HDR, EDR, FDR (extended speeds)
    base = {10: 4, 5: 2, 2.5: 1}                  # QDR, DDR, SDR
    for lane, code in ext.items():
        if per_lane >= lane:
            return 2, 4, code
    for lane, code in base.items():
        if per_lane >= lane:
            return 2, code, 0
    return 2, 1, 0


@dataclass(frozen=True)
class Fabric:
    node_name: str
    hcas: tuple[Hca, ...]

    def by_name(self, name: str) -> Hca | None:
        return next((h for h in self.hcas if h.name == name), None)

    def by_lid(self, lid: int) -> Hca | None:
        return next((h for h in self.hcas if h.lid == lid), None)


def from_state(state: dict, node_name: str | None = None) -> Fabric:
    """The fabric of a compiled state (mokka.core.compile); no HCA when IB is off."""
    node = node_name if node_name is not None else str(state.get("node_name") or "")
    try:
        return Fabric(node, tuple(ibm.hcas(state.get("infiniband") or {}, node)))
    except ValueError as exc:
        raise FabricError(str(exc)) from None


# --- the node's leaf switch ------------------------------------------------------------
#: Every HCA's port 1 is cabled to one mock leaf switch per node (switch port i + 1 to
#: mlx5_i), so ibnetdiscover and iblinkinfo walk the node's whole fabric by directed
#: route. mock-ib alone knows it (sysfs has no switches): its GUID packs HCA index
#: 0xff into the node's GUID layout, its LID sits below the HCAs' range (0x0001-0x00ff).
SWITCH_INDEX = 0xFF
NODE_TYPE_SWITCH = 2
SWITCH_DEVICE_ID = 0xD2F0              # a Quantum-2 class switch ASIC id
MANAGEMENT_PORT = 0


@dataclass(frozen=True)
class Switch:
    guid: int
    lid: int
    node_desc: str
    ports: int                         # external ports: one per HCA


def switch_of(fabric: Fabric) -> Switch | None:
    if not fabric.hcas:
        return None
    base = fabric.hcas[0].node_guid & ~(0xFF << 1) & ~1
    return Switch(guid=base | (SWITCH_INDEX << 1), lid=1 + ibm.fnv1a32(fabric.node_name) % 0xFF,
                  node_desc=f"{fabric.node_name} mock leaf"[:64], ports=len(fabric.hcas))


def walk(fabric: Fabric, local: Hca, path: bytes, hops: int):
    """Where a directed route from ``local`` ends: (Hca or Switch, the port it came in on),
    or None when it leaves through a port with nothing behind it."""
    switch = switch_of(fabric)
    here, port_in = local, 1
    for hop in range(1, hops + 1):
        out = path[hop] if hop < len(path) else 0
        if isinstance(here, Hca):
            if out != 1 or switch is None:
                return None
            here, port_in = switch, here.index + 1
        else:
            if not 1 <= out <= here.ports:
                return None
            here, port_in = fabric.hcas[out - 1], 1
    return here, port_in
