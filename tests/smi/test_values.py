"""How nvidia-smi prints NVML's values (mokka.smi.values): pure."""

from __future__ import annotations

import pytest

from mokka.smi import values


@pytest.mark.parametrize("mw, printed", [
    (120125, "120.12"), (252285, "252.29"), (252595, "252.60"), (100005, "100.00"), (100015, "100.01"),
    (100035, "100.04"), (100045, "100.04"), (100095, "100.10"), (777775, "777.78"), (123455, "123.46")])
def test_watts_print_as_nvidia_smi_550_printed_them(mw, printed):
    """Moving draws hit the third decimal; these are what NVIDIA's nvidia-smi 550 printed
    over the mock library for these draws (it rounds a C float, not a double)."""
    assert values.watts(mw) == f"{printed} W"


@pytest.mark.parametrize("cpus, text", [
    ([], "N/A"), (None, "N/A"), ([0], "0"), ([0, 1, 2, 3], "0-3"), ([0, 2, 4], "0,2,4"),
    ([0, 1, 2, 5, 7, 8], "0-2,5,7-8"), ([71], "71")])
def test_cpu_lists_print_as_ranges(cpus, text):
    assert values.cpu_list(cpus) == text


def test_fabric_uuid_bytes_print_as_a_uuid():
    raw = bytes(range(16))
    assert values.uuid_text(raw) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
