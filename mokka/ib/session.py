"""One client connection of mock-ib as a state machine: bytes in, frames out (no I/O).

A connection is either a umad port (OPEN first, then REGISTER/UNREGISTER/SEND)
or a one-shot query (QUERY_PORT, QUERY_CA, QUERY_CAS). ``Session.receive``
returns what to write back and, for a MAD whose destination LID is a peer
node's, ``Relay`` actions the driver carries over the fabric relay. Protocol
violations raise ``wire.WireError``: the driver closes that connection and
keeps serving the others.

The fabric is read through a callable on every MAD, so a Reload reaches open
connections: a port stays bound to its HCA name, not to a stale record.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Callable

from mokka.ib import attrs, wire
from mokka.ib import mad as m
from mokka.ib import responder
from mokka.ib import fabric as fab
from mokka.ib.fabric import Fabric, Hca

MAX_AGENTS = 32                       # UMAD_CA_MAX_AGENTS
QP0, QP1 = 0, 1
QP1_QKEY = 0x80010000


@dataclass(frozen=True)
class Relay:
    """Carry ``mad`` to the peer owning ``dlid``; its answer goes to ``agent_id``."""
    agent_id: int
    dlid: int
    slid: int
    mad: bytes
    addr: bytes


@dataclass
class Agent:
    mgmt_class: int
    class_version: int
    oui: int


@dataclass
class Session:
    fabric: Callable[[], Fabric]
    directory: Callable[[], tuple[Hca, ...]] = lambda: ()
    hca_name: str | None = None            # set by OPEN
    done: bool = False                     # a query was answered: close after writing
    agents: dict[int, Agent] = field(default_factory=dict)
    _buffer: wire.FrameBuffer = field(default_factory=wire.FrameBuffer)

    def receive(self, data: bytes) -> list:
        """Frames (bytes) to write back and Relay actions, in order."""
        self._buffer.receive(data)
        out: list = []
        while not self.done:
            item = self._buffer.next_frame()
            if item is None:
                break
            out += self._handle(wire.parse_request(*item))
        return out

    # --- dispatch -------------------------------------------------------------------
    def _handle(self, msg) -> list:
        if isinstance(msg, wire.Query):
            if self.hca_name is not None:
                raise wire.WireError("query on an open umad port")
            self.done = True
            return [self._query(msg)]
        if isinstance(msg, wire.Open):
            if self.hca_name is not None:
                raise wire.WireError("second OPEN on one connection")
            hca = self._resolve(msg.ca_name, msg.port)
            if hca is None:
                self.done = True
                return [wire.opened(-errno.ENODEV)]
            self.hca_name = hca.name
            return [wire.opened(0, hca.name, 1)]
        if self.hca_name is None:
            raise wire.WireError("umad request before OPEN")
        if isinstance(msg, wire.Register):
            if len(self.agents) >= MAX_AGENTS and msg.agent_id not in self.agents:
                raise wire.WireError(f"more than {MAX_AGENTS} agents on one port")
            self.agents[msg.agent_id] = Agent(msg.mgmt_class, msg.class_version, msg.oui)
            return []
        if isinstance(msg, wire.Unregister):
            self.agents.pop(msg.agent_id, None)
            return []
        return self._send(msg)

    def _resolve(self, name: str, port: int) -> Hca | None:
        fabric = self.fabric()
        if port not in (0, 1):
            return None
        if name:
            return fabric.by_name(name)
        return next((h for h in fabric.hcas if fab.port_state(h) == fab.PORT_ACTIVE), None) \
            or (fabric.hcas[0] if fabric.hcas else None)

    # --- MADs -------------------------------------------------------------------------
    def _send(self, msg: wire.Send) -> list:
        if msg.agent_id not in self.agents:
            return [wire.recv(msg.agent_id, errno.EINVAL, msg.addr, msg.mad[:m.MAD_SIZE])]
        fabric = self.fabric()
        local = fabric.by_name(self.hca_name)
        if local is None:                  # a Reload removed this HCA
            return [wire.recv(msg.agent_id, errno.ENODEV, msg.addr, msg.mad[:m.MAD_SIZE])]
        try:
            request = m.decode(msg.mad)
            outcome = responder.answer(fabric, local, request, msg.dlid, self.directory())
        except m.MadError:
            return [wire.recv(msg.agent_id, errno.EINVAL, msg.addr, msg.mad[:m.MAD_SIZE])]
        if isinstance(outcome, responder.Reply):
            return [self.deliver(msg.agent_id, outcome.mad, outcome.slid)]
        if isinstance(outcome, responder.Forward):
            return [Relay(msg.agent_id, outcome.dlid, local.lid, m.encode(request), msg.addr)]
        if isinstance(outcome, responder.Unreachable):
            return [wire.recv(msg.agent_id, errno.ETIMEDOUT, msg.addr, m.encode(request))]
        return []

    def deliver(self, agent_id: int, reply: m.Mad, slid: int) -> bytes:
        """A RECV frame carrying ``reply`` from ``slid`` to ``agent_id``."""
        qpn = QP0 if reply.mgmt_class in (m.CLASS_SMI, m.CLASS_SMI_DIRECT) else QP1
        addr = wire.mad_addr(lid=slid, qpn=qpn, qkey=QP1_QKEY if qpn else 0)
        return wire.recv(agent_id, 0, addr, m.encode(reply))

    # --- queries ------------------------------------------------------------------------
    def _query(self, q: wire.Query) -> bytes:
        fabric = self.fabric()
        if q.kind == wire.QUERY_CAS:
            return wire.cas_answer([h.name for h in fabric.hcas])
        hca = self._resolve(q.ca_name, q.port if q.kind == wire.QUERY_PORT else 0)
        if hca is None:
            kind = wire.port_answer if q.kind == wire.QUERY_PORT else wire.ca_answer
            return kind(-errno.ENODEV)
        if q.kind == wire.QUERY_CA:
            return wire.ca_answer(0, ca_name=hca.name, node_type=fab.NODE_TYPE_CA, numports=1,
                                  fw_ver=hca.fw_version, ca_type=hca.hca_type, hw_ver=hca.hw_rev,
                                  node_guid=hca.node_guid, system_guid=hca.node_guid)
        cap = attrs.CAP_MASK | (attrs.CAP_IS_SM if hca.lid == hca.sm_lid else 0)
        return wire.port_answer(0, ca_name=hca.name, port=1, base_lid=hca.lid, lmc=0,
                                sm_lid=hca.sm_lid, sm_sl=0, state=fab.port_state(hca),
                                phys_state=fab.phys_state(hca), rate=hca.rate_gbps, capmask=cap,
                                gid_prefix=fab.GID_PREFIX, port_guid=hca.port_guid,
                                link_layer=hca.link_layer)


def relayed_reply(session: Session, agent_id: int, status: int, slid: int, mad: bytes,
                  addr: bytes) -> bytes:
    """The RECV frame for a relay's answer (status ETIMEDOUT when the peer was lost)."""
    if status:
        return wire.recv(agent_id, status, addr, mad[:m.MAD_SIZE])
    try:
        return session.deliver(agent_id, m.decode(mad), slid)
    except m.MadError:
        return wire.recv(agent_id, errno.EIO, addr, mad[:m.MAD_SIZE])

