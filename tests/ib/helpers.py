"""A two-HCA fabric with literal identities, and MAD builders for the tests."""

from __future__ import annotations

import struct

from mokka.ib import fabric
from mokka.ib import mad as m

#: node-a's two HCAs (mokka.core.infiniband rules): LIDs 0x7126 (the SM) and 0x7127.
STATE = {"infiniband": {"enabled": True, "hca_count": 2, "guid_prefix": "a088c20300ab",
                        "rate_gbps": 400, "fw_version": "28.39.2048", "hca_type": "MT4129"}}
NODE_A = fabric.from_state(STATE, "node-a")
NODE_B = fabric.from_state(STATE, "node-b")
LID_A0, LID_A1 = 0x7126, 0x7127
GUID_A1 = 0xA088C203876B2603          # node-a mlx5_1's port GUID
LID_B1 = 0xA24D
GUID_B1 = 0xA088C203876E4C03


def smp(attr: int, mod: int = 0, method: int = m.METHOD_GET, tid: int = 0x1234) -> m.Mad:
    return m.Mad(mgmt_class=m.CLASS_SMI, method=method, tid=tid, attr_id=attr, attr_mod=mod)


def dr_smp(attr: int, hops: int = 0, tid: int = 0x99) -> m.Mad:
    mad = m.Mad(mgmt_class=m.CLASS_SMI_DIRECT, method=m.METHOD_GET, tid=tid, attr_id=attr,
                class_specific=hops)
    return mad.with_bytes(32, struct.pack(">HH", 0xFFFF, 0xFFFF))


def path_query(dgid_guid: int, tid: int = 0x77, method: int = m.METHOD_GET) -> m.Mad:
    mad = m.Mad(mgmt_class=m.CLASS_SA, method=method, tid=tid, attr_id=m.ATTR_PATH_RECORD,
                class_version=2)
    mad = mad.with_bytes(48, struct.pack(">Q", 1 << 2))          # component mask: DGID
    dgid = bytes.fromhex("fe80000000000000") + dgid_guid.to_bytes(8, "big")
    return mad.with_bytes(m.SA_DATA_OFFSET + 8, dgid)


def ping(tid: int = 0x55, oui: int = m.OPENIB_OUI) -> m.Mad:
    mad = m.Mad(mgmt_class=m.CLASS_OPENIB_PING, method=m.METHOD_GET, tid=tid, attr_id=0)
    return mad.with_bytes(37, oui.to_bytes(3, "big"))
