"""What mock-ib answers, rule by rule, checked on the answer's bytes."""

from __future__ import annotations

import pytest

from mokka.ib import mad as m
from mokka.ib import responder as r
from tests.ib.helpers import (GUID_A1, GUID_B1, LID_A0, LID_A1, LID_B1, NODE_A, NODE_B, dr_smp,
                              path_query, ping, smp)

MLX5_0, MLX5_1 = NODE_A.hcas


def reply(mad: m.Mad, dlid: int, local=MLX5_0, directory=()) -> tuple[bytes, int]:
    outcome = r.answer(NODE_A, local, mad, dlid, directory)
    assert isinstance(outcome, r.Reply), outcome
    return m.encode(outcome.mad), outcome.slid


def test_node_description_of_a_lid_is_its_node_desc():
    wire, slid = reply(smp(m.ATTR_NODE_DESC), LID_A1)
    assert slid == LID_A1
    assert wire[:4] == bytes.fromhex("01010181") and wire[4:6] == b"\0\0"
    assert wire[64:128] == b"node-a mlx5_1".ljust(64, b"\0")


def test_node_info_is_a_one_port_ca_with_the_node_and_port_guids():
    wire, _ = reply(smp(m.ATTR_NODE_INFO), LID_A1)
    assert wire[64:104] == bytes.fromhex(
        "01010101"                       # base, class version, node type CA, 1 port
        "a088c203876b2602"               # system image GUID
        "a088c203876b2602"               # node GUID
        "a088c203876b2603"               # port GUID
        "0080" "1021" "00000000"         # partition cap, device id, revision
        "01" "0002c9")                   # local port, vendor id


def test_port_info_reports_lid_sm_lid_active_linkup_and_4x_ndr():
    wire, _ = reply(smp(m.ATTR_PORT_INFO, mod=1), LID_A1)
    pi = wire[64:128]
    assert pi[8:16] == bytes.fromhex("fe80000000000000")
    assert pi[16:20] == bytes.fromhex("71277126")            # LID, master SM LID
    assert pi[31] == 2                                      # LinkWidthActive 4x
    assert pi[32] & 0xF == 4 and pi[33] >> 4 == 5            # ACTIVE, LinkUp
    assert pi[62] >> 4 == 8                                 # LinkSpeedExtActive NDR


def test_only_the_sm_port_sets_is_sm_in_its_capability_mask():
    sm, _ = reply(smp(m.ATTR_PORT_INFO, mod=1), LID_A0)
    other, _ = reply(smp(m.ATTR_PORT_INFO, mod=1), LID_A1)
    assert sm[64 + 23] & 0x02 and not other[64 + 23] & 0x02


def test_sm_info_at_the_sm_lid_is_master():
    wire, slid = reply(smp(m.ATTR_SM_INFO), LID_A0)
    assert slid == LID_A0
    assert wire[64:88] == bytes.fromhex("a088c203876b2601" "0000000000000000" "00000000" "e3000000")


@pytest.mark.parametrize("mad, dlid, status", [
    (smp(m.ATTR_SM_INFO), LID_A1, 0x000C),
    (smp(m.ATTR_PORT_INFO, mod=2), LID_A1, 0x001C),
    (smp(0x0099), LID_A1, 0x000C),
    (smp(m.ATTR_NODE_INFO, method=0x04), LID_A1, 0x0008),
], ids=["SMInfo away from the SM is unsupported", "a second port does not exist",
        "an unknown attribute is unsupported", "an unknown method is unsupported"])
def test_well_formed_but_unsupported_requests_get_an_error_status(mad, dlid, status):
    wire, _ = reply(mad, dlid)
    assert wire[3] == 0x81 and int.from_bytes(wire[4:6], "big") == status


def test_a_set_is_answered_with_the_current_value():
    wire, _ = reply(smp(m.ATTR_NODE_DESC, method=m.METHOD_SET), LID_A1)
    assert wire[3] == 0x81 and wire[64:77] == b"node-a mlx5_1"


def test_directed_route_of_zero_hops_is_the_local_port():
    wire, slid = reply(dr_smp(m.ATTR_NODE_DESC), 0xFFFF, local=MLX5_1)
    assert slid == LID_A1 and wire[4:6] == bytes.fromhex("8000")
    assert wire[64:77] == b"node-a mlx5_1"


def test_directed_route_beyond_the_hca_is_unreachable():
    assert isinstance(r.answer(NODE_A, MLX5_0, dr_smp(m.ATTR_NODE_INFO, hops=1), 0xFFFF),
                      r.Unreachable)


def test_path_record_by_port_gid_resolves_the_lid():
    wire, slid = reply(path_query(GUID_A1), LID_A0)
    assert slid == LID_A0 and wire[:4] == bytes.fromhex("01030281") and wire[4:6] == b"\0\0"
    record = wire[56:120]
    assert record[8:24] == bytes.fromhex("fe80000000000000a088c203876b2603")
    assert record[24:40] == bytes.fromhex("fe80000000000000a088c203876b2601")
    assert record[40:44] == bytes.fromhex("71277126")


def test_path_record_to_an_unknown_gid_has_no_records():
    wire, _ = reply(path_query(0xDEAD), LID_A0)
    assert wire[4:6] == bytes.fromhex("0300")


def test_path_record_to_a_peer_node_comes_from_the_relay_directory():
    wire, _ = reply(path_query(GUID_B1), LID_A0, directory=NODE_B.hcas)
    assert wire[56 + 40:56 + 44] == bytes.fromhex("a24d7126")


def test_sa_answers_only_at_the_sm_lid():
    assert isinstance(r.answer(NODE_A, MLX5_0, path_query(GUID_A1), LID_A1), r.Unreachable)


def test_ping_is_answered_with_the_node_name():
    wire, slid = reply(ping(), LID_A1)
    assert slid == LID_A1 and wire[:4] == bytes.fromhex("01320181")
    assert wire[40:48] == b"node-a\0\0"


def test_ping_with_another_oui_is_an_invalid_value():
    wire, _ = reply(ping(oui=0x123456), LID_A1)
    assert wire[4:6] == bytes.fromhex("001c")


@pytest.mark.parametrize("dlid, directory, kind", [
    (LID_B1, NODE_B.hcas, r.Forward),
    (LID_B1, (), r.Unreachable),
    (0x0042, NODE_B.hcas, r.Unreachable),
], ids=["a peer's LID is forwarded", "without a relay a peer's LID is unreachable",
        "a LID nobody has is unreachable"])
def test_lids_outside_the_node(dlid, directory, kind):
    assert isinstance(r.answer(NODE_A, MLX5_0, ping(), dlid, directory), kind)


def test_responses_are_not_answered():
    mad = smp(m.ATTR_NODE_INFO, method=m.METHOD_GET_RESP)
    assert isinstance(r.answer(NODE_A, MLX5_0, mad, LID_A1), r.Ignore)
