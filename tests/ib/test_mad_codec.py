"""The MAD codec on bytes, both ways, the h11 way: whole, short, long, hostile."""

from __future__ import annotations

import pytest

from mokka.ib import mad as m

PAD = bytes(232)
CASES = [
    ("SubnGet NodeInfo, LID-routed",
     m.Mad(mgmt_class=0x01, method=0x01, tid=0x1122334455667788, attr_id=0x0011),
     bytes.fromhex("01010101" "0000" "0000" "1122334455667788" "0011" "0000" "00000000") + PAD),
    ("SubnGet PortInfo of port 1, directed route, 0 hops",
     m.Mad(mgmt_class=0x81, method=0x01, tid=0x2A, attr_id=0x0015, attr_mod=1),
     bytes.fromhex("01810101" "0000" "0000" "000000000000002a" "0015" "0000" "00000001") + PAD),
    ("SA GetResp PathRecord with an error status",
     m.Mad(mgmt_class=0x03, method=0x81, tid=7, attr_id=0x0035, class_version=2, status=0x0300),
     bytes.fromhex("01030281" "0300" "0000" "0000000000000007" "0035" "0000" "00000000") + PAD),
]


@pytest.mark.parametrize("name, mad, wire", CASES, ids=[c[0] for c in CASES])
def test_encode_and_decode_are_inverse_on_bytes(name, mad, wire):
    assert m.encode(mad) == wire
    assert m.decode(wire) == mad


@pytest.mark.parametrize("name, mad, wire", CASES, ids=[c[0] for c in CASES])
def test_trailing_bytes_past_256_are_not_part_of_the_mad(name, mad, wire):
    assert m.decode(wire + b"\xff" * 40) == mad


def test_a_datagram_cut_after_the_header_reads_as_zeros():
    wire = CASES[0][2]
    assert m.decode(wire[:24]) == CASES[0][1]


@pytest.mark.parametrize("data, message", [
    (b"", "MAD of 0 bytes is shorter than its 24-byte header"),
    (bytes.fromhex("0101010100000000"), "MAD of 8 bytes is shorter than its 24-byte header"),
    (bytes.fromhex("02") + bytes(255), "MAD base version 2 is not 1"),
], ids=["empty", "truncated header", "unknown base version"])
def test_what_is_not_a_mad_is_a_mad_error(data, message):
    with pytest.raises(m.MadError) as exc:
        m.decode(data)
    assert str(exc.value) == message


def test_directed_route_fields_are_read_from_their_offsets():
    wire = bytearray(CASES[1][2])
    wire[6:8] = bytes([0x01, 0x02])                  # hop pointer 1, hop count 2
    wire[32:36] = bytes.fromhex("ffff0007")          # DrSLID, DrDLID
    wire[129:131] = bytes([1, 3])                    # initial path
    route = m.directed_route(m.decode(bytes(wire)))
    assert (route.hop_pointer, route.hop_count, route.dr_slid, route.dr_dlid) == (1, 2, 0xFFFF, 7)
    assert route.initial_path[:3] == bytes([0, 1, 3])


def test_a_directed_route_longer_than_63_hops_is_refused():
    wire = bytearray(CASES[1][2])
    wire[7] = 64
    with pytest.raises(m.MadError, match="hop count 64 exceeds 63"):
        m.directed_route(m.decode(bytes(wire)))


def test_the_answer_to_a_directed_route_smp_carries_the_direction_bit():
    reply = m.response(m.decode(CASES[1][2]))
    assert m.encode(reply)[:6] == bytes.fromhex("018101818000")
