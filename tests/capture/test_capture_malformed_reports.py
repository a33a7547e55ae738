"""Every malformed report is one line on stderr naming the element (and the GPU) at
fault, exit 1, nothing on stdout: a real capture with one thing changed, through the
real command."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.capture.command import run, run_measured
from tests.capture.reports import capture_files

CAPTURES = capture_files()
pytestmark = pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
#: The A100's report (570, v12): one GPU.
A100 = next((path for path in CAPTURES if path.endswith("qx-a100.xml")), None)
WHOLE = open(A100).read() if A100 else ""
NOT_PRINTED = "which nvidia-smi does not print there"


def changed(path: str, text: str | None = None, *more) -> str:
    """The A100's report with the leaf at ``path`` (below its GPU; "/path" below the root)
    holding ``text``, or taken out (None); ``more``: further (path, text) pairs. Empty
    without the captures (the module is skipped then, but its cases are still made)."""
    if not WHOLE:
        return ""
    root = ET.fromstring(WHOLE)
    for path, text in ((path, text), *more):
        base = root if path.startswith("/") else root.find("gpu")
        parent_path, _, tag = path.lstrip("/").rpartition("/")
        parent = base.find(parent_path) if parent_path else base
        element = parent.find(tag)
        assert element is not None, path
        if text is None:
            parent.remove(element)
        else:
            element.text = text
    return ET.tostring(root, encoding="unicode")


def holds(path: str, text: str) -> str:
    return f"gpu 0: <{path}> holds {text!r}, {NOT_PRINTED}"


POWER = "gpu_power_readings/instant_power_draw"
CASES = [
    # What a profile entry cannot do without, and the head.
    ("a GPU without <pci>", changed("pci"), "gpu 0: <pci> is missing: capture from nvidia-smi -q -x"),
    ("a <pci> without its bus id", changed("pci/pci_bus_id"),
     "gpu 0: <pci/pci_bus_id> is missing: capture from nvidia-smi -q -x"),
    ("a bus id of N/A", changed("pci/pci_bus_id", "N/A"), holds("pci/pci_bus_id", "N/A")),
    ("no <driver_version>", changed("/driver_version"), "<driver_version> is missing: capture from nvidia-smi -q -x"),
    ("a driver version that is no version", changed("/driver_version", "latest"),
     f"<driver_version> holds 'latest', {NOT_PRINTED}"),
    ("a CUDA version of 12.x", changed("/cuda_version", "12.x"), f"<cuda_version> holds '12.x', {NOT_PRINTED}"),
    ("a CUDA version of inf", changed("/cuda_version", "inf"), f"<cuda_version> holds 'inf', {NOT_PRINTED}"),
    # A number read by the field table: every form nvidia-smi never prints.
    *((f"minor number {text!r}", changed("minor_number", text), holds("minor_number", text)) for text in (
        "nan", "inf", "-1", "1e3", "+5", "1_0", "0x", "\u0663", "\uff11", "99999999999999999999",
        "9223372036854775808")),
    ("a minor number past a profile's", changed("minor_number", "255"),
     "gpu 0: <minor_number> holds '255': must be at most 254, got 255"),
    # Power, read as watts: the traceback of 1e309 (inf) and friends.
    *((f"power draw {text!r}", changed(POWER, text), holds(POWER, text)) for text in (
        "1e309 W", "inf W", "nan W", "-49.68 W", "49,68 W", "4.968e1 W", "\u0664\u0669 W", "0x31 W")),
    # Numbers that take more than one leaf.
    *((f"memory total {text!r}", changed("fb_memory_usage/total", text), holds("fb_memory_usage/total", text))
      for text in ("nan MiB", "-40960 MiB", "40960.5 MiB", "\u0664\u0660\u0669\u0666\u0660 MiB",
                   "8796093022208 MiB")),
    ("a temperature past any board's", changed("temperature/gpu_temp", "1001 C"), holds("temperature/gpu_temp", "1001 C")),
    ("a temperature of nan", changed("temperature/gpu_temp", "nan C"), holds("temperature/gpu_temp", "nan C")),
    ("a supported clock of 1e3", changed("supported_clocks/supported_mem_clock/supported_graphics_clock", "1e3 MHz"),
     holds("supported_clocks/supported_mem_clock/supported_graphics_clock", "1e3 MHz")),
    ("a memory clock of -1", changed("supported_clocks/supported_mem_clock/value", "-1 MHz"),
     holds("supported_clocks/supported_mem_clock/value", "-1 MHz")),
    ("a retired page that is no address", changed("retired_pages/double_bit_retirement/retired_count", "1",
                                                  ("retired_pages/double_bit_retirement/retired_pagelist", "0xnope")),
     holds("retired_pages/double_bit_retirement/retired_pagelist", "0xnope")),
    ("a PCI device id written with 0x", changed("pci/pci_device_id", "0x20B010DE"),
     holds("pci/pci_device_id", "0x20B010DE")),
    # Readable, but past what the profile's field holds: the element is named with the field's rule.
    ("a utilization of 250 %", changed("utilization/gpu_util", "250 %"),
     "gpu 0: <utilization/gpu_util> holds '250 %': must be at most 100, got 250"),
    ("a name of 200 characters", changed("product_name", "A" * 200),
     "gpu 0: <product_name> holds 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'... (200 characters): "
     "is 200 characters long; at most 96"),
    ("a serial of a megabyte", changed("serial", "9" * (1 << 20)),
     "gpu 0: <serial> holds '9999999999999999999999999999999999999999'... (1048576 characters), " + NOT_PRINTED),
    # The document.
    ("empty", "", "is empty; give the output of nvidia-smi -q -x"),
    ("a BOM and blanks", "\ufeff  \n", "is empty; give the output of nvidia-smi -q -x"),
    ("a root that is not <nvidia_smi_log>", WHOLE.replace("nvidia_smi_log>", "nvidia_smi_report>"),
     "is <nvidia_smi_report> XML, not nvidia-smi's <nvidia_smi_log>: give the output of nvidia-smi -q -x"),
    ("10 000 <gpu> elements", "<nvidia_smi_log>" + "<gpu id='0'/>" * 10_000 + "</nvidia_smi_log>",
     "lists 10000 GPUs; a profile holds at most 64"),
    ("100 000 levels outside any <gpu>", "<nvidia_smi_log>" + "<a>" * 100_000 + "</a>" * 100_000 + "</nvidia_smi_log>",
     "nests elements deeper than 8 levels below <a>; nvidia-smi's report nests 4"),
    ("100 000 levels inside a <gpu>", changed("serial", "NESTED").replace("NESTED", "<a>" * 100_000 + "</a>" * 100_000),
     "nests elements deeper than 8 levels below <gpu>; nvidia-smi's report nests 4"),
    ("an element name of 65 characters", WHOLE.replace("<uuid>", "<" + "n" * 65 + "/><uuid>", 1),
     f"names an element of 65 characters (<{'n' * 40}...>); nvidia-smi's are under 64"),
    ("a million empty elements", "<nvidia_smi_log><gpu id='0'>" + "<a/>" * 1_000_000 + "</gpu></nvidia_smi_log>",
     "has over 524288 elements; a 64-GPU nvidia-smi -q -x report has about 34000"),
    ("70 000 distinct leaves", "<nvidia_smi_log><gpu id='0'>" + "".join(f"<a{n}/>" for n in range(70_000))
     + "</gpu></nvidia_smi_log>",
     "has over 65536 leaf elements in its GPUs; a 64-GPU nvidia-smi -q -x report has about 30000"),
    ("cut off mid-element", WHOLE[:WHOLE.find("<pci_bus_id>") + 5],
     "is not whole XML (line 83, column 4: unclosed token): give the complete output of nvidia-smi -q -x"),
]


@pytest.mark.parametrize("text, problem", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_report_is_one_line_naming_the_element(text, problem, tmp_path):
    report = tmp_path / "node.xml"
    report.write_text(text)
    result = run(str(report))
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"capture: {report}: {problem}\n")


def test_an_empty_reading_is_left_out_as_n_a_is(tmp_path):
    """nvidia-smi prints N/A, never nothing; both leave the field out, so the mock says N/A."""
    report = tmp_path / "node.xml"
    report.write_text(changed(POWER, ""))
    result = run(str(report))
    assert (result.returncode, result.stderr) == (0, "")
    assert "current_draw_mw" not in result.stdout
    assert "current_draw_mw: 49680" in run(A100).stdout


def test_a_5_mb_report_within_the_16_mib_bound_is_captured_at_a_bounded_cost(tmp_path):
    """5 MB of processes (a busy node): the report's own bound (16 MiB) reads it, the
    processes have no home in a profile, and the profile is the one of the report
    without them."""
    process = ("<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A"
               "</compute_instance_id><pid>{}</pid><type>C</type><process_name>/usr/bin/python3</process_name>"
               "<used_memory>512 MiB</used_memory></process_info>")
    busy = "".join(process.format(pid) for pid in range(1, 25_000))
    assert 5_000_000 < len(busy) < 6_000_000
    report = tmp_path / "node.xml"
    report.write_text(WHOLE.replace("<processes>", "<processes>" + busy, 1))
    result = run_measured(str(report))
    print(f"5 MB report: {result.seconds:.2f} s, {result.max_rss_kib // 1024} MiB peak RSS")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[1:] == run(A100).stdout.splitlines()[1:]
    assert result.max_rss_kib < 200 * 1024, f"{result.max_rss_kib} KiB"
