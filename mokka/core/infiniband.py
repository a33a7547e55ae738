"""The mock HCAs of a node: identities (GUIDs, LIDs) and attributes, from the
compiled ``infiniband`` block and the node name. Pure; stdlib only.

One home for the rules the ib simulator (sysfs tree) and mock-ib (the SMP and
SA answers) must agree on:

- a GUID keeps the profile's prefix (its first 4 bytes; colons ignored) and
  packs, in its low 32 bits, a 23-bit FNV-1a hash of the node name, the 8-bit
  HCA index and the U/L bit: clear on the node GUID, set on the port GUID;
- a node's LIDs are one block of ``hca_count`` consecutive LIDs in
  0x0100-0xbfff, placed by the FNV-1a 32 of the node name (the HCA count is
  the stride); the first HCA's LID is every port's SM LID;
- ``gids/0`` is fe80:: followed by the port GUID;
- node_desc comes from ``node_desc_template`` ({node_name}, {idx}), at most 64 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

HCA_PREFIX = "mlx5_"
LID_MIN, LID_MAX = 0x0100, 0xBFFF
PORT = 1                      # one port per HCA, numbered from 1 as in sysfs
#: sysfs port states and their numeric codes (what ``ports/1/state`` shows first).
PORT_STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
PHYS_STATES = {"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4,
               "LinkUp": 5, "LinkErrorRecovery": 6, "Phy Test": 7}
#: ports/1/rate: Gb/s -> (lanes, width, per-lane speed name), as the kernel prints it.
RATES = {10: "10 Gb/sec (4X SDR)", 20: "20 Gb/sec (4X DDR)", 40: "40 Gb/sec (4X QDR)",
         56: "56 Gb/sec (4X FDR)", 100: "100 Gb/sec (4X EDR)", 200: "200 Gb/sec (4X HDR)",
         400: "400 Gb/sec (4X NDR)", 800: "800 Gb/sec (4X XDR)"}
#: mlx5's PCI identity: Mellanox's vendor id, ConnectX-7's device id (0x1021) where an
#: hca_type names none (mokka.core.hcapci), and the subsystem device the modalias carries.
MLX_VENDOR = 0x15B3
MLX_DEVICE = 0x1021
MLX_SUBSYSTEM_DEVICE = 0x0008
CAP_MASK = 0x2659E848          # an mlx5 HCA port with no SM (IsSM clear)


def fnv1a32(text: str) -> int:
    """FNV-1a (32-bit) of the UTF-8 text."""
    h = 0x811C9DC5
    for byte in text.encode():
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def fnv1a_23(text: str) -> int:
    """The low 23 bits of FNV-1a 32: what a GUID packs."""
    return fnv1a32(text) & 0x7FFFFF


def guid_prefix(text: str) -> int:
    """The 4-byte prefix of a profile's guid_prefix ("a088c20300ab", "a288c2:0300:ab")."""
    digits = "".join(c for c in str(text) if c not in ":.- ").lower()
    if not digits or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"guid_prefix {text!r} is not hexadecimal")
    return int(digits.ljust(8, "0")[:8], 16)


def guid(prefix: str, node_name: str, index: int, port: bool) -> int:
    return (guid_prefix(prefix) << 32) | (fnv1a_23(node_name) << 9) | ((index & 0xFF) << 1) | int(port)


def base_lid(node_name: str, hca_count: int) -> int:
    stride = max(1, hca_count)
    blocks = (LID_MAX - LID_MIN + 1) // stride
    return LID_MIN + (fnv1a32(node_name) % blocks) * stride


def guid_text(value: int) -> str:
    """sysfs form: four groups of four hex digits (``a088:c203:0000:0a12``)."""
    h = f"{value:016x}"
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


def gid_text(port_guid: int) -> str:
    return "fe80:0000:0000:0000:" + guid_text(port_guid)


@dataclass(frozen=True)
class Hca:
    index: int
    name: str                 # mlx5_<index>
    node_guid: int
    port_guid: int
    lid: int
    sm_lid: int
    node_desc: str
    port_state: str           # ACTIVE ...
    phys_state: str           # LinkUp ...
    rate_gbps: int
    link_layer: str
    fw_version: str
    hw_rev: str
    board_id: str
    hca_type: str


def hcas(ib: dict, node_name: str) -> list[Hca]:
    """The node's HCAs from a compiled ``infiniband`` block; none when it is off."""
    count = int(ib.get("hca_count") or 0) if ib.get("enabled") else 0
    if count <= 0:
        return []
    prefix = str(ib.get("guid_prefix") or "")
    base = base_lid(node_name, count)
    template = str(ib.get("node_desc_template") or "{node_name} mlx5_{idx}")
    state = str(ib.get("port_state") or "ACTIVE").upper()
    link = str(ib.get("link_layer") or "InfiniBand")
    if "/" in link:           # the schema's "InfiniBand/Ethernet" names the choice, not a value
        link = link.split("/", 1)[0]
    out = []
    for i in range(count):
        out.append(Hca(
            index=i, name=f"{HCA_PREFIX}{i}",
            node_guid=guid(prefix, node_name, i, port=False),
            port_guid=guid(prefix, node_name, i, port=True),
            lid=base + i, sm_lid=base,
            node_desc=_node_desc(template, node_name, i),
            port_state=state if state in PORT_STATES else "ACTIVE",
            phys_state=str(ib.get("phys_state") or "LinkUp"),
            rate_gbps=int(ib.get("rate_gbps") or 400), link_layer=link,
            fw_version=str(ib.get("fw_version") or ""), hw_rev=str(ib.get("hw_rev") or "0x0"),
            board_id=str(ib.get("board_id") or ""), hca_type=str(ib.get("hca_type") or "")))
    return out


def _node_desc(template: str, node_name: str, index: int) -> str:
    try:
        text = template.format(node_name=node_name, idx=index)
    except (KeyError, IndexError, ValueError):
        text = f"{node_name} {HCA_PREFIX}{index}"
    return text[:64]                  # NodeDescription is 64 bytes on the wire


def modalias(device: int) -> str:
    """An HCA's PCI modalias (the kernel's ``pci:v..d..sv..sd..bc..sc..i..`` form)."""
    v, sd = MLX_VENDOR, MLX_SUBSYSTEM_DEVICE
    return f"pci:v0000{v:04X}d0000{device:04X}sv0000{v:04X}sd0000{sd:04X}bc02sc07i00"


def rate_text(gbps: int) -> str:
    return RATES.get(gbps, f"{gbps} Gb/sec (4X)")


def phys_state_text(name: str) -> str:
    code = PHYS_STATES.get(name, 5)
    return f"{code}: {name}"


def port_state_text(name: str) -> str:
    return f"{PORT_STATES.get(name, 4)}: {name}"
