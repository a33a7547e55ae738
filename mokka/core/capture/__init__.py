"""``mokka profile capture``: a real node's ``nvidia-smi -q -x`` -> a profile that reproduces it.

    xmlreport   the report's text -> its head and each GPU's leaves (both DTD layouts)
    record      one GPU's leaves -> its record: the device fields they say (derived: the
                fields of several leaves; words: nvidia-smi's words -> the profile's)
    closest     the built-in board most like the capture, for what -q does not show
    writer      the records and guesses -> the profile's YAML, with a comment per guess

``capture(text, source)`` runs them; everything here is pure but for reading the
built-in profiles. A report it cannot read raises CaptureError, one line naming
the element (and the GPU) at fault; so does a report whose profile Mokka would
not load.
"""

from __future__ import annotations

import copy
import re

from mokka.core.capture import closest, record, writer, xmlreport

#: nvidia-smi's CUDA version: "12.8", "13.0" (or N/A on a node without CUDA).
CUDA_VERSION = re.compile(r"([0-9]{1,4})\.([0-9]{1,4})", re.ASCII)
#: nvidia-smi's driver version: "570.148.08" (what the profile's system.driver_version takes).
DRIVER_VERSION = re.compile(r"[0-9]{1,8}(?:\.[0-9]{1,8}){1,3}", re.ASCII)


class CaptureError(ValueError):
    """What is wrong with the report, in words for one line after its name."""


def capture(text: str | bytes, source: str, dynamic: bool = False) -> str:
    """The profile of the node that printed ``text`` (the output of nvidia-smi -q -x)."""
    try:
        report = xmlreport.parse(text)
    except xmlreport.ReportError as exc:
        raise CaptureError(str(exc)) from None
    records = []
    for n, gpu in enumerate(report.gpus):
        try:
            records.append(record.record(gpu.leaves, gpu.supported_clocks))
        except record.RecordError as exc:
            raise CaptureError(f"gpu {n}: {exc}") from None
    text = writer.render(build(report, records, source, dynamic))
    from mokka.core.profile import ProfileError, parse
    try:                                           # what Mokka (and so the Go loader) accepts
        parse(text.encode(), source=source)
    except ProfileError as exc:
        raise CaptureError(f"makes no valid profile: {exc.field}: {exc.message}") from None
    return text


def build(report: xmlreport.Report, records: list, source: str, dynamic: bool) -> writer.Profile:
    board = closest.closest(records[0])
    guessed = []
    system = _system(report)
    p = writer.Profile(system=system, records=records)
    arch = records[0].get("architecture")
    cc = closest.compute_capability(board, arch)
    if cc is not None:
        for rec in records:
            rec["compute_capability"] = cc
        p.comments["compute_capability"] = [f"guessed: the built-in {board.name} profile's ({arch}); -q shows none"]
        guessed.append("compute_capability")
    attrs = closest.cuda(board, records[0].get("name"))
    if attrs:
        for rec in records:
            rec["cuda"] = copy.deepcopy(attrs)
        p.comments["cuda"] = [f"guessed: the built-in {board.name} profile's CUDA attributes; -q shows none"]
        guessed.append("cuda")
    mig = closest.mig_instances(board)
    table = closest.mig_table(board)
    if any("mig" in rec for rec in records):
        for rec in records:
            rec.setdefault("mig", {})["max_gpu_instances"] = mig
            rec["mig"].update(copy.deepcopy(table))
        taken = "max_gpu_instances and the partition table" if table else "max_gpu_instances"
        p.comments["mig"] = [f"guessed: {taken}, the built-in {board.name} profile's (-q shows none)"]
        guessed.append("mig.max_gpu_instances")
        if table:
            guessed.append("mig.gpu_instance_profiles")
    moving = closest.dynamic_metrics(board) if dynamic else None
    if moving:
        writer.move_readings(records, moving)
        for rec in records:
            rec["dynamic_metrics"] = moving
        p.comments["dynamic_metrics"] = [f"the built-in {board.name} profile's moving readings (--dynamic)"]
    c2c = {"Enabled": True, "Disabled": False}.get(report.gpus[0].leaves.get("c2c_mode", ""))
    parts = {
        "nvlink": (closest.nvlink(board, c2c), "the NVLink peer map (-q shows only the C2C mode)"),
        "infiniband": (closest.infiniband(board), "the InfiniBand HCAs (not an NVML device)"),
        "pcie_topology": (closest.pcie_topology(board, [r["pci"]["bus_id"] for r in records]),
                          "the PCI tree: root complexes, NUMA nodes and CPU affinity"),
    }
    for name, (block, what) in parts.items():
        if block is not None:
            p.blocks[name] = block
            p.comments[name] = [f"guessed: {what}, from the built-in {board.name} profile"]
            guessed.append(name)
    gpu = records[0]
    p.header = [f"Captured by mokka profile capture from {source}: {len(records)} x {gpu.get('name', 'GPU')},",
                f"driver {system['driver_version']}, CUDA {system.get('cuda_version', 'N/A')}.",
                f"Guessed (nvidia-smi -q does not show them), from the built-in {board.name} profile: "
                + (", ".join(guessed) or "nothing") + "."]
    return p


def _system(report: xmlreport.Report) -> dict:
    driver = report.driver_version
    if "driver_version" not in report.printed:
        raise CaptureError("<driver_version> is missing: capture from nvidia-smi -q -x")
    if not DRIVER_VERSION.fullmatch(driver):
        raise CaptureError(f"<driver_version> holds {driver[:40]!r}, which nvidia-smi does not print there")
    system = {"driver_version": driver}
    cuda = report.cuda_version
    if cuda and cuda != "N/A":
        match = CUDA_VERSION.fullmatch(cuda)
        if not match:
            raise CaptureError(f"<cuda_version> holds {cuda[:40]!r}, which nvidia-smi does not print there")
        major, minor = match.groups()
        system.update({"nvml_version": f"{major}.{driver}", "cuda_version": cuda,
                       "cuda_version_major": int(major), "cuda_version_minor": int(minor)})
    return system
