"""Attribute payloads mock-ib answers with, as bytes (IBA vol. 1, 14.2.5 and 15.2.5).

Each function takes plain values and returns the attribute's exact wire bytes;
``mokka.ib.responder`` decides which to send.
"""

from __future__ import annotations

import struct

from mokka.core import infiniband as ibm

NODE_INFO_SIZE = 40
PORT_INFO_SIZE = 64
SM_INFO_SIZE = 24
PATH_RECORD_SIZE = 64
NODE_DESC_SIZE = 64

SM_STATE_MASTER = 3
SM_PRIORITY = 14
#: PortInfo CapabilityMask: an mlx5 port's (the sysfs cap_mask, one home in
#: mokka.core.infiniband), plus IsSM (bit 1) on the node's SM port.
CAP_IS_SM = 1 << 1
CAP_MASK = ibm.CAP_MASK
MTU_4096 = 5
MTU_CAP = MTU_4096
VL_CAP_VL0_7 = 4
PARTITION_CAP = 128
DEFAULT_PKEY = 0xFFFF


def node_desc(text: str) -> bytes:
    return text.encode("utf-8", "replace")[:NODE_DESC_SIZE].ljust(NODE_DESC_SIZE, b"\0")


def node_info(*, node_type: int, num_ports: int, system_guid: int, node_guid: int,
              port_guid: int, device_id: int, revision: int, local_port: int,
              vendor_id: int) -> bytes:
    return struct.pack(">BBBBQQQHHIB", 1, 1, node_type, num_ports, system_guid, node_guid,
                       port_guid, PARTITION_CAP, device_id, revision, local_port) \
        + vendor_id.to_bytes(3, "big")


def port_info(*, lid: int, sm_lid: int, local_port: int, port_state: int, phys_state: int,
              width: int, speed: int, speed_ext: int, is_sm: bool, gid_prefix: int,
              lmc: int = 0, sm_sl: int = 0) -> bytes:
    b = bytearray(PORT_INFO_SIZE)
    cap = CAP_MASK | (CAP_IS_SM if is_sm else 0)
    struct.pack_into(">QQHHI", b, 0, 0, gid_prefix, lid, sm_lid, cap)
    b[28] = local_port
    b[29] = 3 if width else 0                     # LinkWidthEnabled: 1x|4x
    b[30] = 3                                     # LinkWidthSupported: 1x|4x
    b[31] = width                                 # LinkWidthActive (2 = 4x)
    b[32] = (speed_supported(speed) << 4) | (port_state & 0xF)
    b[33] = ((phys_state & 0xF) << 4) | 2         # LinkDownDefaultState: polling
    b[34] = lmc & 0x7
    b[35] = (speed << 4) | speed_supported(speed)  # LinkSpeedActive | LinkSpeedEnabled
    b[36] = (MTU_4096 << 4) | (sm_sl & 0xF)       # NeighborMTU | MasterSMSL
    b[37] = (VL_CAP_VL0_7 << 4)                   # VLCap | InitType
    b[41] = MTU_CAP                               # InitTypeReply | MTUCap
    b[42] = 0x1F & 18                             # VLStallCount 0 | HOQLife
    b[43] = (VL_CAP_VL0_7 << 4)                   # OperationalVLs
    b[50] = 8                                     # GUIDCap
    b[51] = 18                                    # SubnetTimeOut
    b[52] = 16                                    # RespTimeValue
    b[62] = ((speed_ext & 0xF) << 4) | (ext_supported(speed_ext) & 0xF)
    b[63] = ext_supported(speed_ext) & 0x1F       # LinkSpeedExtEnabled
    return bytes(b)


def speed_supported(speed: int) -> int:
    """Every base speed up to ``speed`` (SDR 1, DDR 2, QDR 4)."""
    return {1: 1, 2: 3, 4: 7}.get(speed, 7)


def ext_supported(ext: int) -> int:
    mask = 0
    for bit in (1, 2, 4, 8):
        if bit <= ext:
            mask |= bit
    return mask


SWITCH_INFO_SIZE = 20
LINEAR_FDB_CAP = 0xC000
MULTICAST_FDB_CAP = 0x1000


def switch_info(*, linear_fdb_top: int) -> bytes:
    """SwitchInfo: a plain leaf with linear forwarding and enhanced port 0."""
    b = bytearray(SWITCH_INFO_SIZE)
    struct.pack_into(">HHHH", b, 0, LINEAR_FDB_CAP, 0, MULTICAST_FDB_CAP, linear_fdb_top)
    b[11] = 18 << 3                               # LifeTimeValue
    struct.pack_into(">HH", b, 12, 1, 32)         # LIDsPerPort, PartitionEnforcementCap
    b[16] = 0x08                                  # EnhancedPort0
    struct.pack_into(">H", b, 18, 0xC000)         # MulticastFDBTop (none yet)
    return bytes(b)


def sm_info(*, guid: int, act_count: int = 0, priority: int = SM_PRIORITY,
            state: int = SM_STATE_MASTER) -> bytes:
    return struct.pack(">QQIB", guid, 0, act_count, ((priority & 0xF) << 4) | (state & 0xF)) \
        + bytes(3)


def path_record(*, dgid: bytes, sgid: bytes, dlid: int, slid: int, mtu: int = MTU_4096,
                rate: int = 0, pkey: int = DEFAULT_PKEY, sl: int = 0) -> bytes:
    b = bytearray(PATH_RECORD_SIZE)
    b[8:24] = dgid[:16].ljust(16, b"\0")
    b[24:40] = sgid[:16].ljust(16, b"\0")
    struct.pack_into(">HH", b, 40, dlid, slid)
    struct.pack_into(">I", b, 44, 0)              # RawTraffic | FlowLabel | HopLimit
    b[48] = 0                                     # TClass
    b[49] = 0x80 | 1                              # Reversible | NumbPath
    struct.pack_into(">H", b, 50, pkey)
    struct.pack_into(">H", b, 52, sl & 0xF)       # QoSClass | SL
    b[54] = (2 << 6) | (mtu & 0x3F)               # MTUSelector exactly | MTU
    b[55] = (2 << 6) | (rate & 0x3F)              # RateSelector exactly | Rate
    b[56] = (2 << 6) | 18                         # PacketLifeTime
    return bytes(b)


def path_rate(rate_gbps: int) -> int:
    """The SA rate enum of a link speed (IBA table 224 and its additions)."""
    table = {2: 2, 10: 3, 30: 4, 5: 5, 20: 6, 40: 7, 60: 8, 80: 9, 120: 10, 14: 11, 56: 12,
             112: 13, 168: 14, 25: 15, 100: 16, 200: 17, 300: 18, 28: 19, 50: 20, 400: 21,
             600: 22, 800: 23}
    return table.get(rate_gbps, 21)
