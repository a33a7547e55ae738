"""Which elements ``nvidia-smi -q`` prints, by the driver it comes with.

The report's tree (mokka.smi.report) holds every element of the drivers Mokka
follows; a driver's own report leaves some out. The rules are what captures of
real boards show (NVIDIA/k8s-test-infra's hardware captures: an A100 on
570.148.08, H100 and B200 on 580.105.08, GB200 and GB300 on 580.173.02, L40S
and T4 on 595.91.07), each applied from the first version seen printing it:

- before 580: DTD v12; "Display Mode" is the display mode itself (580 on
  prints NVML's deprecation text there and the mode as "Display Attached");
  a "GPU Reset Status" block and a "Voltage" block; no PDI, no clocks event
  reason counters, no repair rows, no fabric health summary or incorrect
  configuration;
- 580.173 on: the unrepairable memory row, the inactive row remappings and the
  fabric's partition assigned flag;
- 595 on: the EDPp multiplier.

A driver before 570 (535-560, v12 as well) is given the 570 layout: no capture
of one shows otherwise. Pure.
"""

from __future__ import annotations

DTD_V12, DTD_V13 = "nvsmi_device_v12.dtd", "nvsmi_device_v13.dtd"
#: nvmlErrorString(NVML_ERROR_DEPRECATED): what 580 on prints as the display mode.
DEPRECATED_TEXT = "Requested functionality has been deprecated"

R580, R580_173, R595 = (580,), (580, 173), (595,)
#: Element paths below <gpu> -> the first driver that prints them.
SINCE = {
    "display_attached": R580, "pdi": R580, "clocks_event_reasons_counters": R580,
    "ecc_errors/channel_repair_pending": R580, "ecc_errors/tpc_repair_pending": R580,
    "fabric/health/summary": R580, "fabric/health/incorrect_configuration": R580,
    "ecc_errors/unrepairable_memory": R580_173, "remapped_rows/remapped_row_corr_inactive": R580_173,
    "remapped_rows/remapped_row_unc_inactive": R580_173, "fabric/health/partition_assigned": R580_173,
    "edpp_multiplier": R595,
}
#: Element paths -> the first driver that no longer prints them.
UNTIL = {"gpu_reset_status": R580, "voltage": R580}


def version(text: str | None) -> tuple:
    """"580.173.02" -> (580, 173, 2); anything unreadable is taken as the newest."""
    # Every run of ASCII digits, as the driver's dotted version has them (no re: the
    # report is on nvidia-smi's startup path, and re with enum is a third of it).
    numbers, run = [], ""
    for ch in text or "":
        if "0" <= ch <= "9":
            run += ch
        elif run:
            numbers.append(int(run))
            run = ""
    if run:
        numbers.append(int(run))
    return tuple(numbers) if numbers else (10**6,)


class Layout:
    """What one driver's report prints: its version, and the element paths the caller
    leaves out."""
    __slots__ = ("driver", "without", "dropped", "above_dropped")

    def __init__(self, driver: tuple, without: tuple = ()):
        self.driver, self.without = driver, without
        # Only the paths the rules or the caller name can be left out: prune looks for
        # them, and descends only into the elements that hold one.
        self.dropped = frozenset(p for p in (*SINCE, *UNTIL, *without) if not self.prints(p))
        self.above_dropped = frozenset(p[:at] for p in self.dropped for at in range(len(p)) if p[at] == "/")

    @property
    def dtd(self) -> str:
        return DTD_V12 if self.driver < R580 else DTD_V13

    @property
    def display_mode_deprecated(self) -> bool:
        return self.driver >= R580

    def prints(self, path: str) -> bool:
        if path in self.without:
            return False
        since, until = SINCE.get(path), UNTIL.get(path)
        return (since is None or self.driver >= since) and (until is None or self.driver < until)


def for_driver(text: str | None, without: tuple = ()) -> Layout:
    return Layout(version(text), tuple(without))


def prune(nodes: list, layout: Layout, prefix: str = "") -> list:
    """The tree without the elements this driver does not print."""
    if not layout.dropped:
        return nodes
    out = []
    for tag, value in nodes:
        path = prefix + tag
        if path in layout.dropped:
            continue
        if path in layout.above_dropped and isinstance(value, list):
            value = prune(value, layout, path + "/")
        out.append((tag, value))
    return out
