"""What ctl ecc and ctl nvlink write, from what NVML reads now: counts add up and stop at
NVML's largest, the retired pages stay within the state's list, and what a reset keeps goes to
the lasting document."""

from __future__ import annotations

import pytest

from mokka.smi import errinject as ei
from mokka.smi.ctl import CtlError


def test_counts_add_to_what_nvml_reads_and_stop_at_the_largest_unsigned_long_long():
    near = 18446744073709551610
    plan = ei.ecc_plan("sbe", "l2", 10, ei.EccNow((near, 7), (near, near)))
    assert plan.own == {"ecc": {"errors": {
        "volatile": {"single_bit": {"total": 18446744073709551615, "l2_cache": 17}},
        "aggregate": {"single_bit": {"total": 18446744073709551615, "l2_cache": 18446744073709551615}}}}}
    assert plan.lasting == {"ecc": {"errors": {"aggregate": {"single_bit": {
        "total": 18446744073709551615, "l2_cache": 18446744073709551615}}}}}
    assert plan.events == [(1, 0)]


def test_a_double_bit_error_outside_device_memory_remaps_nothing():
    plan = ei.ecc_plan("dbe", "register", 1, ei.EccNow((0, 0), (4, 4), remapped=(0, 0, 0, 0)))
    assert plan.events == [(2, 0), (None, 48)]
    assert "remapped_rows" not in plan.own and "remapped_rows" not in plan.lasting


def test_a_double_bit_error_marks_a_row_for_remapping_until_a_reset():
    plan = ei.ecc_plan("dbe", "dram", 5, ei.EccNow((0, 0), (0, 0), remapped=(2, 7, 0, 0)))
    assert plan.lasting["remapped_rows"] == {"uncorrectable": 12}
    assert plan.own["remapped_rows"] == {"uncorrectable": 12, "pending": True}
    assert plan.events == [(2, 0), (None, 48), (None, 63)]


@pytest.mark.parametrize("containment, xid", [("contained", 94), ("uncontained", 95)])
def test_a_board_with_error_containment_raises_its_contained_or_uncontained_xid(containment, xid):
    plan = ei.ecc_plan("dbe", "dram", 1, ei.EccNow((0, 0), (0, 0), remapped=(0, 0, 0, 0),
                                                    containment=containment))
    assert plan.events == [(2, 0), (None, xid), (None, 63)]
    sram = ei.ecc_plan("dbe", "sram", 1, ei.EccNow((0, 0), (0, 0), containment=containment))
    assert sram.events == [(2, 0), (None, xid)]


def test_past_the_frame_buffers_512_spare_rows_remapping_fails_for_good():
    plan = ei.ecc_plan("dbe", "dram", 5, ei.EccNow((0, 0), (0, 0), remapped=(10, 500, 0, 0),
                                                    containment="contained"))
    assert plan.lasting["remapped_rows"] == {"uncorrectable": 505, "correctable": 7}
    plan = ei.ecc_plan("dbe", "dram", 5, ei.EccNow((0, 0), (0, 0), remapped=(0, 510, 0, 0),
                                                    containment="contained"))
    assert plan.lasting["remapped_rows"] == {"uncorrectable": 512, "failure_occurred": True}
    assert plan.own["remapped_rows"] == {"uncorrectable": 512, "failure_occurred": True, "pending": True}
    assert plan.events == [(2, 0), (None, 94), (None, 63), (None, 64)]
    full = ei.ecc_plan("dbe", "dram", 1, ei.EccNow((0, 0), (0, 0), remapped=(0, 512, 0, 0)))
    assert full.own["remapped_rows"] == {"uncorrectable": 512, "failure_occurred": True}
    assert full.events == [(2, 0), (None, 48), (None, 64)]


@pytest.mark.parametrize("architecture, device, contains", [
    (7, 0x20B010DE, True),        # A100 SXM4 (GA100)
    (7, 0x20B710DE, True),        # A30 (GA100)
    (7, 0x223610DE, False),       # A10 (GA102)
    (8, 0x26B510DE, False),       # L40S (Ada)
    (6, 0x1EB810DE, False),       # T4 (Turing)
    (9, 0x233010DE, True),        # H100 SXM5
    (10, 0x234010DE, True),       # B200
    (None, None, False),
])
def test_error_containment_is_ga100s_gh100s_and_later_boards(architecture, device, contains):
    assert ei.has_containment(architecture, device) is contains


def test_retired_pages_follow_the_highest_and_stop_at_the_frame_buffers_64():
    plan = ei.ecc_plan("dbe", "dram", 3, ei.EccNow((0, 0), (0, 0), retired=[0x7000]))
    assert plan.lasting["retired_pages"]["double_bit_retirement"] == {
        "count": 4, "addresses": [0x7000, 0x8000, 0x9000, 0xA000]}
    assert plan.own["retired_pages"]["pending_retirement"] is True
    assert plan.events == [(2, 0), (None, 48), (None, 63)]
    full = ei.ecc_plan("dbe", "dram", 5, ei.EccNow((0, 0), (0, 0), retired=list(range(60)), retired_other=2))
    assert full.lasting["retired_pages"]["double_bit_retirement"]["count"] == 62
    assert full.events == [(2, 0), (None, 48), (None, 63), (None, 64)]
    none_left = ei.ecc_plan("dbe", "dram", 1, ei.EccNow((0, 0), (0, 0), retired=list(range(64))))
    assert "retired_pages" not in none_left.own and none_left.events == [(2, 0), (None, 48), (None, 64)]


def test_an_nvlink_error_raises_one_counter_of_one_link_and_lists_every_link():
    plan = ei.nvlink_plan(1, "crc-flit", 5, [[0, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    assert plan.own == {"nvlink_errors": [
        {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": 0},
        {"replay": 1, "recovery": 2, "crc_flit": 8, "crc_data": 4, "ecc_data": 5}]}
    assert plan.lasting == {} and plan.events == []


def test_an_nvlink_error_after_a_link_reset_writes_the_whole_count_and_says_what_nvml_reads():
    plan = ei.nvlink_plan(0, "replay", 2, [[10, 0, 0, 0, 0]], reset=10)
    assert plan.own == {"nvlink_errors": [{"replay": 12, "recovery": 0, "crc_flit": 0, "crc_data": 0,
                                           "ecc_data": 0}]}
    assert plan.said == ["NVLink 0 replay errors 2"]


@pytest.mark.parametrize("text", ["0", "1000001", "-3", "٣", "1_0", "x", "99999999999999999999999"])
def test_a_count_out_of_range_or_not_ascii_digits_is_refused(text):
    with pytest.raises(CtlError, match=r"^--count .*: expected an integer from 1 to 1000000$"):
        ei.parse_count(text)


@pytest.mark.parametrize("text", ["4", "-1", "a", ""])
def test_a_link_the_gpu_lacks_is_refused(text):
    with pytest.raises(CtlError, match=r": not an NVLink of this GPU; expected a link from 0 to 3$"):
        ei.parse_link(text, 4)


def test_a_double_bit_sram_error_counts_as_sec_ded_where_the_board_splits_them():
    split = ei.ecc_plan("dbe", "sram", 1, ei.EccNow((0, 3), (0, 3), sram_split=True))
    assert split.own["ecc"]["sram"] == {"volatile": {"uncorrectable_secded": 4},
                                        "aggregate": {"uncorrectable_secded": 4}}
    whole = ei.ecc_plan("dbe", "sram", 1, ei.EccNow((0, 3), (0, 3)))
    assert whole.lasting["ecc"]["sram"] == {"aggregate": {"uncorrectable": 4}}
    assert split.events == whole.events == [(2, 0), (None, 48)]
