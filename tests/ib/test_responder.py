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


def routed(hops: int, path: bytes, attr: int = m.ATTR_NODE_INFO, mod: int = 0) -> m.Mad:
    mad = dr_smp(attr, hops=hops).with_bytes(128, path)
    return m.Mad(**{**mad.__dict__, "attr_mod": mod})


def test_one_hop_out_of_port_1_reaches_the_leaf_switch_on_the_hcas_port():
    wire, slid = reply(routed(1, bytes([0, 1])), 0xFFFF, local=MLX5_1)
    assert slid == 18                                        # the leaf's LID, below 0x0100
    assert wire[64:101] == bytes.fromhex(
        "01010202" "a088c203876b27fe" "a088c203876b27fe" "a088c203876b27fe"
        "0080" "d2f0" "00000000" "02")                        # switch, 2 ports, came in on 2


def test_two_hops_through_the_switch_reach_another_hca():
    wire, slid = reply(routed(2, bytes([0, 1, 1]), m.ATTR_NODE_DESC), 0xFFFF, local=MLX5_1)
    assert slid == LID_A0 and wire[64:77] == b"node-a mlx5_0"


def test_switch_port_info_names_the_arrival_port_as_local_port():
    wire, _ = reply(routed(1, bytes([0, 1]), m.ATTR_PORT_INFO, mod=2), 0xFFFF, local=MLX5_0)
    pi = wire[64:128]
    assert pi[16:20] == bytes.fromhex("00127126") and pi[28] == 1
    assert pi[32] & 0xF == 4 and pi[33] >> 4 == 5


def test_switch_info_and_node_description_of_the_leaf():
    info, _ = reply(routed(1, bytes([0, 1]), m.ATTR_SWITCH_INFO), 0xFFFF)
    assert info[64:72] == bytes.fromhex("c000" "0000" "1000" "7127")
    desc, _ = reply(routed(1, bytes([0, 1]), m.ATTR_NODE_DESC), 0xFFFF)
    assert desc[64:80] == b"node-a mock leaf"


@pytest.mark.parametrize("hops, path", [(1, bytes([0, 2])), (2, bytes([0, 1, 3])),
                                        (2, bytes([0, 1, 0]))],
                         ids=["an HCA has no port 2", "the leaf has no port 3 with two HCAs",
                              "port 0 leads nowhere"])
def test_directed_routes_through_missing_ports_are_unreachable(hops, path):
    assert isinstance(r.answer(NODE_A, MLX5_0, routed(hops, path), 0xFFFF), r.Unreachable)


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
