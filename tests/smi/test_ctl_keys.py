"""``mokka ctl set`` words -> the override mapping it writes (pure table)."""

from __future__ import annotations

import pytest

from mokka.smi.ctl import CtlError, parse_assignments


@pytest.mark.parametrize("words, expected", [
    (["temperature=80"], {"thermal": {"temperature_gpu_c": 80}}),
    (["temperature=80C", "memory_temperature=70"],
     {"thermal": {"temperature_gpu_c": 80, "temperature_memory_c": 70}}),
    (["power=300W"], {"power": {"current_draw_mw": 300000}}),
    (["power=0"], {"power": {"current_draw_mw": 0}}),
    (["utilization.gpu=100%", "utilization.memory=7"], {"utilization": {"gpu": 100, "memory": 7}}),
    (["memory.used=2048MiB"], {"memory": {"used_bytes": 2147483648}}),
    (["clocks.sm=1500", "clocks.graphics=1400MHz", "clocks.memory=2619"],
     {"clocks": {"sm_current": 1500, "graphics_current": 1400, "memory_current": 2619}}),
    (["ecc.volatile.dbe=2", "ecc.aggregate.sbe=9"],
     {"ecc": {"errors": {"volatile": {"double_bit": {"total": 2}},
                         "aggregate": {"single_bit": {"total": 9}}}}}),
    (["fabric.state=IN_PROGRESS"], {"fabric": {"state": "in_progress"}}),
    (["fabric.state=auto"], {"fabric": {"state": "auto"}}),
])
def test_valid_words(words, expected):
    assert parse_assignments(words) == expected


@pytest.mark.parametrize("words, message", [
    (["temperature=hot"], "temperature=hot: expected an integer from 0 to 200 (optionally with 'C')"),
    (["temperature=201"], "temperature=201: expected an integer from 0 to 200 (optionally with 'C')"),
    (["utilization.gpu=101"], "utilization.gpu=101: expected an integer from 0 to 100 (optionally with '%')"),
    (["power=-1W"], "power=-1W: expected an integer from 0 to 10000 (optionally with 'W')"),
    (["fabric.state=up"],
     "fabric.state=up: expected one of not_supported, not_started, in_progress, completed, auto"),
    (["temperature"], "temperature: expected KEY=VALUE"),
    (["=5"], "=5: expected KEY=VALUE"),
    (["temperature=50", "temperature=60"], "temperature: given more than once; give each key once"),
    ([], "nothing to set: give KEY=VALUE"),
])
def test_invalid_words_name_the_key_and_what_is_allowed(words, message):
    with pytest.raises(CtlError) as err:
        parse_assignments(words)
    assert str(err.value).startswith(message)


def test_an_unknown_key_lists_the_keys():
    with pytest.raises(CtlError) as err:
        parse_assignments(["fan=50"])
    assert str(err.value).startswith("fan: not a key ctl sets; keys: temperature (0..200C), ")


@pytest.mark.parametrize("text, code", [("79", 79), (" 48 ", 48), ("1", 1), ("999", 999)])
def test_xid_codes(text, code):
    from mokka.smi.ctl import parse_xid_code
    assert parse_xid_code(text) == code


@pytest.mark.parametrize("text", ["0", "1000", "-1", "79.0", "fallen", ""])
def test_xid_code_refused_in_one_line(text):
    from mokka.smi.ctl import parse_xid_code
    with pytest.raises(CtlError) as err:
        parse_xid_code(text)
    assert str(err.value) == (f"{text}: not an Xid code; expected an integer from 1 to 999 "
                              "(e.g. 79: fallen off the bus, 48: double bit ECC error)")


#: A state companion's lines (mokka.engine.flatstate) around GPU 3: other GPUs' lines, a GPU
#: whose number starts with 3, values that are no plain number.
COMPANION = b"""# mokka-nvml state 2
digest sha256:00
body 0 crc32:00000000
gpu.2.memory.total_bytes 17179869184
gpu.3.clocks.sm_max \xd9\xa1\xd9\xa0\xd9\xa0\xd9\xa0
gpu.3.clocks.graphics_max 1000
gpu.3.memory.total_bytes 8589934592
gpu.3.name NVIDIA T4
gpu.3.power.max_limit_mw N/A
gpu.3.thermal.shutdown_threshold_c -5
gpu.30.memory.reserved_bytes 1048576
gpu.len 31
"""


def test_board_limits_are_the_named_gpus_plain_numbers_only():
    from mokka.smi.ctl import board_limits
    assert board_limits(COMPANION, 3) == {"clocks.graphics_max": 1000, "memory.total_bytes": 8 << 30}


@pytest.mark.parametrize("words, board, message", [
    (["memory.used=8193"], {"memory.total_bytes": 8 << 30},
     "memory.used=8193: expected an integer from 0 to 8192 (optionally with 'MiB'); "
     "8192 MiB is this GPU's memory less what the driver reserves"),          # no reserve: none
    (["memory.used=1"], {"memory.total_bytes": 1 << 20, "memory.reserved_bytes": 2 << 20},
     "memory.used=1: expected an integer from 0 to 0 (optionally with 'MiB'); "
     "0 MiB is this GPU's memory less what the driver reserves"),             # reserve past total
    (["power=71W"], {"power.max_limit_mw": 70_999},
     "power=71W: expected an integer from 0 to 70 (optionally with 'W'); "
     "70 W is this GPU's maximum power limit"),                              # whole watts within
    (["clocks.memory=20001"], {"clocks.memory_max": 30_000},
     "clocks.memory=20001: expected an integer from 0 to 20000 (optionally with 'MHz')"),  # the key's own
])
def test_values_past_the_board_name_the_key_value_and_range(words, board, message):
    with pytest.raises(CtlError) as err:
        parse_assignments(words, board)
    assert str(err.value) == message


def test_positive_control_a_board_without_a_limit_holds_the_key_to_its_own_range():
    assert parse_assignments(["memory.used=16777216", "power=10000W"], {"clocks.sm_max": 1}) == {
        "memory": {"used_bytes": 16777216 << 20}, "power": {"current_draw_mw": 10_000_000}}
