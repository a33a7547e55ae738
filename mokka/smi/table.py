"""The default ``nvidia-smi`` table and ``-L``: the 580 series layout, 91 columns.

nvidia-htop and similar scrapers parse this by regex and by column, so every
width here is the real tool's (checked against captured 580.x output).
"""

from __future__ import annotations

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


def list_line(gpu: dict) -> str:
    return f"GPU {gpu['index']}: {gpu.get('name', '')} (UUID: {gpu.get('uuid', '')})"


def _name(name: str) -> str:
    return name if len(name) <= 27 else name[:24] + "..."


def _gpu_rows(gpu: dict) -> list:
    power = gpu.get("power") or {}
    thermal = gpu.get("thermal") or {}
    mem = v.memory_mib(gpu)
    pm = "On" if v.persistence(gpu) == "Enabled" else "Off"
    disp = "On" if v.word(v.get(gpu, "display.active"), "Disabled") == "Enabled" else "Off"
    ecc = "0" if v.ecc_mode(gpu) == "Enabled" else ("Off" if v.ecc_mode(gpu) == "Disabled" else "N/A")
    if ecc == "0":
        ecc = str(v.ecc_count(gpu, "volatile", "double_bit", "total") or 0)
    fan = v.fan(gpu).replace(" ", "")
    temp = "N/A" if v.is_na(thermal.get("temperature_gpu_c")) else f"{thermal['temperature_gpu_c']}C"
    draw = "N/A" if v.is_na(power.get("current_draw_mw")) else f"{round(power['current_draw_mw'] / 1000)}W"
    cap = "N/A" if v.is_na(power.get("enforced_limit_mw")) else f"{round(power['enforced_limit_mw'] / 1000)}"
    pwr = f"{draw} / {cap:>4}W"
    util = (gpu.get("utilization") or {}).get("gpu")
    util = "N/A" if v.is_na(util) else f"{util}%"
    mig = v.mig_mode(gpu)
    bus = (gpu.get("pci") or {}).get("bus_id", "")
    return [
        f"|{gpu['index']:>4}  {_name(str(gpu.get('name', ''))):<27}    {pm:<3} |"
        f"{bus:>19} {disp:>3} |{ecc:>21} |",
        f"| {fan:>3}{temp:>6}    {str(gpu.get('performance_state') or 'P0'):<2}{pwr:>24} |"
        f"{mem['used']:>8}MiB / {mem['total']:>6}MiB |{util:>8}{v.compute_mode(gpu):>13} |",
        f"|{'':41}|{'':24}|{mig:>21} |",
    ]


def _process_row(gpu: dict, p: dict) -> str:
    mem = f"{int(p.get('used_memory_mib') or 0)}MiB"
    name = str(p.get("name") or "")
    room = WIDTH - 43 - 2 - len(mem) - 1
    if len(name) > room:
        name = "..." + name[-(room - 3):]
    line = f"|{gpu['index']:>5}   N/A  N/A{p['pid']:>16}{str(p.get('type') or 'C'):>7}   {name:<{room}} {mem} |"
    return line


def render(gpus: list, system: dict, timestamp: str) -> str:
    drv = str(system.get("driver_version") or "N/A")
    cuda = str(system.get("cuda_version") or "N/A")
    out = [f"{timestamp}       ", FULL_RULE,
           f"| NVIDIA-SMI {drv:<23}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|", RULE]
    out += HEAD
    for gpu in gpus:
        out += _gpu_rows(gpu)
        out.append(RULE)
    if not gpus:
        out.append(RULE)
    out += ["", FULL_RULE] + PROC_HEAD
    rows = [_process_row(g, p) for g in gpus for p in v.processes(g)]
    if not rows:
        rows = ["|  No running processes found" + " " * (WIDTH - 30) + "|"]
    out += rows + [FULL_RULE]
    return "\n".join(out) + "\n"
