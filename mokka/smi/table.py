"""The default ``nvidia-smi`` table and ``-L``: the 580 series layout, 91 columns.

nvidia-htop and similar scrapers parse this by regex and by column, so every
width here is the real tool's (checked against captured 580.x output).
"""

from __future__ import annotations

from mokka.smi import gpu as g
from mokka.smi import values as v

WIDTH = 91
RULE = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
FULL_RULE = "+" + "-" * (WIDTH - 2) + "+"
HEAD = [
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
]
PROC_HEAD = [
    "| Processes:" + " " * (WIDTH - 13) + "|",
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
    "|        ID   ID                                                               Usage      |",
    "|" + "=" * (WIDTH - 2) + "|",
]


def list_line(gpu) -> str:
    return f"GPU {gpu.index}: {gpu.name() or ''} (UUID: {gpu.uuid() or ''})"


#: What separates a MIG device's profile from its parent's name in NVML's name for it.
MIG_NAME_MARK = " MIG "


def mig_profile(device) -> str:
    """``3g.40gb`` of NVML's "NVIDIA H100 80GB HBM3 MIG 3g.40gb"."""
    name = device.name() or ""
    return name.rpartition(MIG_NAME_MARK)[2] if MIG_NAME_MARK in name else name


def mig_list_lines(gpu) -> list:
    """-L's lines for a GPU's MIG devices: the profile padded to 12, as NVIDIA's prints them."""
    return [f"  MIG {mig_profile(d):<12}Device {d.index:>2}: (UUID: {d.uuid() or ''})" for d in gpu.mig_devices()]


def _name(name: str) -> str:
    return name if len(name) <= 27 else name[:24] + "..."


def _ecc_cell(gpu) -> str:
    current, _ = gpu.ecc_mode()
    if current is None:
        return "N/A"
    if not current:
        return "Off"
    if gpu.mig_mode()[0] == g.ENABLED:
        return "On"                               # a MIG-enabled board counts per MIG device
    errors = gpu.ecc_total(g.UNCORRECTED, g.VOLATILE)
    return "N/A" if errors is None else str(errors)


def _gpu_rows(gpu) -> list:
    mem = gpu.memory()
    used, total = (v.mib(mem.used), v.mib(mem.total)) if mem else (0, 0)
    pm = "On" if gpu.persistence_mode() == g.ENABLED else "Off"
    disp = "On" if gpu.display_active() == g.ENABLED else "Off"
    speed = gpu.fan_speed() if gpu.fan_count() else None
    fan = "N/A" if speed is None else f"{speed}%"
    temp = gpu.temperature()
    temp = "N/A" if temp is None else f"{temp}C"
    draw, cap = gpu.power_usage(), gpu.power_limit()
    draw = "N/A" if draw is None else f"{round(draw / 1000)}W"
    cap = "N/A" if cap is None else f"{round(cap / 1000)}"
    pwr = f"{draw} / {cap:>4}W"
    util = gpu.utilization()
    util = "N/A" if util is None else f"{util.gpu}%"
    mig = v.enabled(gpu.mig_mode()[0])
    compute = v.word(v.COMPUTE_MODES, gpu.compute_mode())
    pstate = v.pstate(gpu.performance_state())
    return [
        f"|{gpu.index:>4}  {_name(gpu.name() or ''):<27}    {pm:<3} |"
        f"{gpu.bus_id():>19} {disp:>3} |{_ecc_cell(gpu):>21} |",
        f"| {fan:>3}{temp:>6}    {pstate:<2}{pwr:>24} |"
        f"{used:>8}MiB / {total:>6}MiB |{util:>8}{compute:>13} |",
        f"|{'':41}|{'':24}|{mig:>21} |",
    ]


def _process_row(gpu, process) -> str:
    pid, used, kind, name = process
    mem = f"{v.mib(used)}MiB"
    room = WIDTH - 43 - 2 - len(mem) - 1
    if len(name) > room:
        name = "..." + name[-(room - 3):]
    return f"|{gpu.index:>5}   N/A  N/A{pid:>16}{kind:>7}   {name:<{room}} {mem} |"


MIG_HEAD = [
    "| MIG devices:" + " " * (WIDTH - 15) + "|",
    "+------------------+----------------------------------+-----------+-----------------------+",
    "| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|      Shared           |",
    "|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |",
    "|                  |                                  |        ECC|                       |",
    "|==================+==================================+===========+=======================|",
]
MIG_RULE = "+------------------+----------------------------------+-----------+-----------------------+"


def _mig_rows(gpu, device) -> list:
    gi, ci = device.instance_ids()
    mem, bar, attrs = device.memory(), device.bar1(), device.attributes()
    used, total = (v.mib(mem.used), v.mib(mem.total)) if mem else (0, 0)
    bar_used, bar_total = (v.mib(bar.used), v.mib(bar.total)) if bar else (0, 0)
    errors = device.ecc_counter(g.UNCORRECTED, g.VOLATILE, g.LOCATION_SRAM)
    ecc = "N/A" if errors is None else str(errors)
    a = attrs or _NO_ATTRIBUTES
    return [f"|{gpu.index:>3}{gi:>5}{ci:>4}{device.index:>4}  |{used:>16}MiB / {total:>5}MiB    | "
            f"{a.multiprocessorCount:<3}{ecc:>6} |{a.sharedCopyEngineCount:>3}{a.sharedEncoderCount:>4}"
            f"{a.sharedDecoderCount:>5}{a.sharedOfaCount:>5}{a.sharedJpegCount:>5} |",
            f"|{'':18}|{bar_used:>18}MiB / {f'{bar_total}MiB':<10}|{'':11}|{'':23}|",
            MIG_RULE]


class _NoAttributes:
    multiprocessorCount = sharedCopyEngineCount = sharedEncoderCount = 0
    sharedDecoderCount = sharedOfaCount = sharedJpegCount = 0


_NO_ATTRIBUTES = _NoAttributes()


def mig_table(gpus: list) -> list:
    """The MIG devices block NVIDIA's table prints below the GPUs when any exists."""
    rows = [row for gpu in gpus for device in gpu.mig_devices() for row in _mig_rows(gpu, device)]
    return ["", FULL_RULE] + MIG_HEAD + rows if rows else []


def render(gpus: list, driver: str | None, cuda: str | None, timestamp: str) -> str:
    drv, cuda = driver or "N/A", cuda or "N/A"
    out = [f"{timestamp}       ", FULL_RULE,
           f"| NVIDIA-SMI {drv:<23}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|", RULE]
    out += HEAD
    for gpu in gpus:
        out += _gpu_rows(gpu)
        out.append(RULE)
    if not gpus:
        out.append(RULE)
    out += mig_table(gpus)
    out += ["", FULL_RULE] + PROC_HEAD
    rows = [_process_row(gpu, p) for gpu in gpus for p in gpu.processes() if p[0]]
    if not rows:
        rows = ["|  No running processes found" + " " * (WIDTH - 30) + "|"]
    out += rows + [FULL_RULE]
    return "\n".join(out) + "\n"
