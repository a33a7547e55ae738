"""What mock-ib answers to one MAD (pure): the node's SMA, its SM and SA, and ibping.

``answer(fabric, local, mad, dlid, directory)`` returns an ``Outcome``:

- ``Reply``: the response MAD and the LID it comes from;
- ``Forward``: the destination LID belongs to a peer node (the relay carries it);
- ``Unreachable``: nothing answers at that address; the driver hands the request
  back with status ETIMEDOUT, as the kernel does when a send times out;
- ``Ignore``: a response or trap nobody waits for.

The SMA answers NodeDescription, NodeInfo, PortInfo and, on the node's SM port,
SMInfo (MASTER); directed routes past an HCA reach the node's leaf switch
(``fabric.walk``), which answers NodeDescription, NodeInfo, SwitchInfo and each
port's PortInfo; the SA answers PathRecord Get/GetTable; every port answers the
OpenIB ping class with the node name, as an ``ibping -S`` server would.
Anything else well-formed gets an error status, never an exception.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mokka.ib import attrs
from mokka.ib import mad as m
from mokka.ib import fabric as fab
from mokka.ib.fabric import Fabric, Hca

PERMISSIVE_LID = 0xFFFF
PR_COMP_DGID = 1 << 2
PR_COMP_SGID = 1 << 3
PR_COMP_DLID = 1 << 4
PR_COMP_SLID = 1 << 5


@dataclass(frozen=True)
class Reply:
    mad: m.Mad
    slid: int


@dataclass(frozen=True)
class Forward:
    dlid: int


@dataclass(frozen=True)
class Unreachable:
    reason: str


@dataclass(frozen=True)
class Ignore:
    reason: str


Outcome = Reply | Forward | Unreachable | Ignore


def answer(fabric: Fabric, local: Hca, mad: m.Mad, dlid: int,
           directory: tuple[Hca, ...] = ()) -> Outcome:
    """The outcome of ``mad`` sent from ``local``'s port to ``dlid`` (the umad address)."""
    if mad.is_response or mad.method in (m.METHOD_TRAP, m.METHOD_TRAP_REPRESS, m.METHOD_REPORT):
        return Ignore(f"method 0x{mad.method:02x} expects no answer")
    if mad.mgmt_class == m.CLASS_SMI_DIRECT:
        route = m.directed_route(mad)
        end = fab.walk(fabric, local, route.initial_path, route.hop_count)
        if end is None:
            return Unreachable(f"directed route of {route.hop_count} hops leads nowhere")
        node, port_in = end
        if isinstance(node, fab.Switch):
            return Reply(_switch_sma(fabric, node, mad, port_in), node.lid)
        return Reply(_sma(fabric, node, mad), node.lid)
    switch = fab.switch_of(fabric)
    if switch is not None and dlid == switch.lid and mad.mgmt_class == m.CLASS_SMI:
        return Reply(_switch_sma(fabric, switch, mad, fab.MANAGEMENT_PORT), switch.lid)
    target = fabric.by_lid(dlid)
    if target is None:
        if dlid == PERMISSIVE_LID:
            target = local
        elif any(h.lid == dlid for h in directory):
            return Forward(dlid)
        else:
            return Unreachable(f"no port has LID 0x{dlid:04x}")
    if mad.mgmt_class == m.CLASS_SMI:
        return Reply(_sma(fabric, target, mad), target.lid)
    if mad.mgmt_class == m.CLASS_SA:
        if target.lid != target.sm_lid:
            return Unreachable(f"LID 0x{dlid:04x} is not the subnet manager")
        return Reply(_sa(fabric, local, mad, directory), target.lid)
    if mad.mgmt_class == m.CLASS_OPENIB_PING:
        return Reply(_ping(fabric, mad), target.lid)
    return Reply(m.response(mad, status=m.STATUS_BAD_VERSION), target.lid)


# --- subnet management agent ------------------------------------------------------

def _sma(fabric: Fabric, hca: Hca, mad: m.Mad) -> m.Mad:
    if mad.class_version != 1:
        return m.response(mad, status=m.STATUS_BAD_VERSION, method=m.METHOD_GET_RESP)
    if mad.method not in (m.METHOD_GET, m.METHOD_SET):
        return m.response(mad, status=m.STATUS_METHOD_UNSUPPORTED, method=m.METHOD_GET_RESP)
    payload = _sma_attribute(fabric, hca, mad.attr_id, mad.attr_mod)
    if isinstance(payload, int):
        return m.response(mad, status=payload, method=m.METHOD_GET_RESP)
    # A Set is answered with the current value: the mock's attributes are read-only.
    return m.with_smp_data(m.response(mad, method=m.METHOD_GET_RESP), payload)


def _sma_attribute(fabric: Fabric, hca: Hca, attr: int, mod: int) -> bytes | int:
    if attr == m.ATTR_NODE_DESC:
        return attrs.node_desc(hca.node_desc)
    if attr == m.ATTR_NODE_INFO:
        return attrs.node_info(node_type=fab.NODE_TYPE_CA, num_ports=1,
                               system_guid=hca.node_guid, node_guid=hca.node_guid,
                               port_guid=hca.port_guid, device_id=fab.CONNECTX7_DEVICE_ID,
                               revision=0, local_port=1, vendor_id=fab.MELLANOX_VENDOR_ID)
    if attr == m.ATTR_PORT_INFO:
        if mod not in (0, 1):
            return m.STATUS_INVALID_ATTR_VALUE
        width, speed, ext = fab.rate_code(hca.rate_gbps)
        return attrs.port_info(lid=hca.lid, sm_lid=hca.sm_lid, local_port=1,
                               port_state=fab.port_state(hca), phys_state=fab.phys_state(hca),
                               width=width, speed=speed, speed_ext=ext,
                               is_sm=hca.lid == hca.sm_lid, gid_prefix=fab.GID_PREFIX)
    if attr == m.ATTR_SM_INFO:
        if hca.lid != hca.sm_lid:
            return m.STATUS_METHOD_ATTR_UNSUPPORTED
        return attrs.sm_info(guid=hca.port_guid)
    return m.STATUS_METHOD_ATTR_UNSUPPORTED


def _switch_sma(fabric: Fabric, switch: fab.Switch, mad: m.Mad, port_in: int) -> m.Mad:
    if mad.class_version != 1:
        return m.response(mad, status=m.STATUS_BAD_VERSION, method=m.METHOD_GET_RESP)
    if mad.method not in (m.METHOD_GET, m.METHOD_SET):
        return m.response(mad, status=m.STATUS_METHOD_UNSUPPORTED, method=m.METHOD_GET_RESP)
    payload = _switch_attribute(fabric, switch, mad.attr_id, mad.attr_mod, port_in)
    if isinstance(payload, int):
        return m.response(mad, status=payload, method=m.METHOD_GET_RESP)
    return m.with_smp_data(m.response(mad, method=m.METHOD_GET_RESP), payload)


def _switch_attribute(fabric: Fabric, switch: fab.Switch, attr: int, mod: int,
                      port_in: int) -> bytes | int:
    if attr == m.ATTR_NODE_DESC:
        return attrs.node_desc(switch.node_desc)
    if attr == m.ATTR_NODE_INFO:
        return attrs.node_info(node_type=fab.NODE_TYPE_SWITCH, num_ports=switch.ports,
                               system_guid=switch.guid, node_guid=switch.guid,
                               port_guid=switch.guid, device_id=fab.SWITCH_DEVICE_ID,
                               revision=0, local_port=port_in, vendor_id=fab.MELLANOX_VENDOR_ID)
    if attr == m.ATTR_SWITCH_INFO:
        return attrs.switch_info(linear_fdb_top=max(h.lid for h in fabric.hcas))
    if attr == m.ATTR_PORT_INFO:
        port = mod & 0xFF
        if port > switch.ports:
            return m.STATUS_INVALID_ATTR_VALUE
        rate = max(h.rate_gbps for h in fabric.hcas) if port == 0 else fabric.hcas[port - 1].rate_gbps
        width, speed, ext = fab.rate_code(rate)
        sm = fabric.hcas[0]
        # LocalPortNum is the port the SMP came in on, whichever port it asks about.
        return attrs.port_info(lid=switch.lid, sm_lid=sm.sm_lid, local_port=port_in,
                               port_state=fab.PORT_ACTIVE,
                               phys_state=fab.phys_state(sm) if port else 5,
                               width=width, speed=speed, speed_ext=ext, is_sm=False,
                               gid_prefix=fab.GID_PREFIX)
    return m.STATUS_METHOD_ATTR_UNSUPPORTED


# --- subnet administration ---------------------------------------------------------

def _sa(fabric: Fabric, local: Hca, mad: m.Mad, directory: tuple[Hca, ...]) -> m.Mad:
    if mad.class_version != 2:
        return m.response(mad, status=m.STATUS_BAD_VERSION)
    if mad.attr_id != m.ATTR_PATH_RECORD:
        return m.response(mad, status=m.STATUS_METHOD_ATTR_UNSUPPORTED)
    if mad.method not in (m.METHOD_GET, m.METHOD_GET_TABLE):
        return m.response(mad, status=m.STATUS_METHOD_UNSUPPORTED)
    known = fabric.hcas + tuple(h for h in directory if fabric.by_lid(h.lid) is None)
    mask, query = m.sa_component_mask(mad), m.sa_data(mad)
    dest = _pick(known, mask, PR_COMP_DGID, PR_COMP_DLID, query[8:24], query[40:42])
    src = _pick(known, mask, PR_COMP_SGID, PR_COMP_SLID, query[24:40], query[42:44]) \
        if mask & (PR_COMP_SGID | PR_COMP_SLID) else local
    if dest is None or src is None:
        return m.response(mad, status=m.SA_STATUS_NO_RECORDS)
    record = attrs.path_record(dgid=fab.gid(dest), sgid=fab.gid(src), dlid=dest.lid, slid=src.lid,
                               rate=attrs.path_rate(min(src.rate_gbps, dest.rate_gbps)))
    if mad.method == m.METHOD_GET_TABLE:
        reply = m.response(mad, method=m.METHOD_GET_TABLE_RESP)
        # RMPP: version 1, DATA, active|first|last, segment 1, payload length.
        reply = reply.with_bytes(24, struct.pack(">BBBBII", 1, 1, 0x07, 0, 1,
                                                 m.SA_DATA_OFFSET - 36 + attrs.PATH_RECORD_SIZE))
    else:
        reply = m.response(mad)
    return m.with_sa_records(reply, [record], attrs.PATH_RECORD_SIZE)


def _pick(known: tuple[Hca, ...], mask: int, gid_bit: int, lid_bit: int,
          gid: bytes, lid: bytes) -> Hca | None:
    if mask & gid_bit:
        guid = int.from_bytes(gid[8:16], "big")
        return next((h for h in known if h.port_guid == guid), None)
    if mask & lid_bit:
        value = int.from_bytes(lid, "big")
        return next((h for h in known if h.lid == value), None)
    return None


# --- ibping ---------------------------------------------------------------------------

def _ping(fabric: Fabric, mad: m.Mad) -> m.Mad:
    if mad.method != m.METHOD_GET:
        return m.response(mad, status=m.STATUS_METHOD_UNSUPPORTED)
    if m.vendor_oui(mad) != m.OPENIB_OUI:
        return m.response(mad, status=m.STATUS_INVALID_ATTR_VALUE)
    return m.with_vendor_data(m.response(mad), fabric.node_name.encode("utf-8", "replace") + b"\0")
