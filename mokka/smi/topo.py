"""``nvidia-smi topo -m`` and ``nvidia-smi nvlink -s``.

NV<k> between two GPUs needs NVLink through switches: both GPUs have links to
switches (``nvlink_links`` with remote type switch), k = the smaller active
count. Without switches there is no NV# at all (b200). Otherwise the PCIe path
decides: same root complex PHB, same NUMA node NODE, else SYS.
"""

from __future__ import annotations

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def switch_links(gpu: dict) -> int:
    return sum(1 for link in gpu.get("nvlink_links") or []
               if str(link.get("remote_device_type", "")).lower() == "switch"
               and str(link.get("state", "active")).lower() == "active")


def link(a: dict, b: dict) -> str:
    if a is b:
        return " X "
    k = min(switch_links(a), switch_links(b))
    if k > 0:
        return f"NV{k}"
    if a.get("root_complex") == b.get("root_complex"):
        return "PHB"
    if a.get("numa_node") == b.get("numa_node"):
        return "NODE"
    return "SYS"


def matrix(gpus: list) -> str:
    head = "\t" + "".join(f"GPU{g['index']}\t" for g in gpus) + "CPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    rows = [head]
    for a in gpus:
        cells = "".join(f"{link(a, b)}\t" for b in gpus)
        cpu = a.get("cpu_affinity") or "N/A"
        numa = a.get("numa_node")
        rows.append(f"GPU{a['index']}\t{cells}{cpu}\t{'N/A' if numa is None else numa}\t\tN/A")
    return "\n".join(rows) + "\n\n" + LEGEND


def _gbps(mbps: int) -> str:
    return f"{mbps / 1000:g} GB/s"


def status(gpus: list, nvlink: dict | None) -> str:
    per_link = int((nvlink or {}).get("bandwidth_per_link_mbps") or 0)
    out = []
    for gpu in gpus:
        links = gpu.get("nvlink_links") or []
        if not links:
            continue                  # as NVIDIA's 550 does for a GPU whose NVLink count is 0
        out.append(f"GPU {gpu['index']}: {gpu.get('name', '')} (UUID: {gpu.get('uuid', '')})")
        for lk in links:
            active = str(lk.get("state", "active")).lower() == "active"
            out.append(f"\t Link {lk.get('link', 0)}: " + (_gbps(per_link) if active else "<inactive>"))
    return "".join(line + "\n" for line in out)
