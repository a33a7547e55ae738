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
    (["temperature=50", "temperature=60"], {"thermal": {"temperature_gpu_c": 60}}),   # the last wins
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
