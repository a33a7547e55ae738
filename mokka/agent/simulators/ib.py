"""ib: the mock InfiniBand sysfs and /dev tree under the overlay's ``ib/``, the
IB preload shims and the node's IB tools under the driver tree.

``ib/sys/class/infiniband/mlx5_<n>/…`` (what ibstat, ibstatus and libibumad
read; its ``device`` a link to the HCA's PCI function in the overlay's ``sys/``), ``ib/sys/class/infiniband_mad`` and ``infiniband_verbs`` (the umad and
uverbs class entries, naming their HCA), ``ib/dev/infiniband/{umad,issm,uverbs}<n>``
(placeholder files: never device nodes, so nothing on the host can reach a real
HCA through them). Identities come from
``mokka.core.infiniband``, from the profile and the node name only, so the tree
is byte-identical across restarts. An IB-off profile leaves ``ib/`` empty (no
``sys/class/infiniband``: the tools report no HCA, as on a host without one).
"""

from __future__ import annotations

import os

from mokka.agent.desired import Desired
from mokka.agent.hostfs import Entry, File, Link
from mokka.agent.simulators import Host, Readiness
from mokka.core import hcapci, pcitopo
from mokka.core import infiniband as ibm
from mokka.core import names

OWNER = "ib"
UMAD_ABI = "5"
UVERBS_ABI = "6"
UVERBS_DEVICE_ABI = "1"
#: Port counters (ports/1/counters/<name>): all zero on an idle mock fabric.
COUNTERS = ("excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
            "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
            "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
            "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
            "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
            "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets",
            "unicast_xmit_packets", "VL15_dropped")


def hca_files(hca: ibm.Hca) -> dict[str, str]:
    """Relative path under sys/class/infiniband/<name> -> content (without newline); its
    ``device`` is a link to the HCA's PCI function (``tree``)."""
    port = f"ports/{ibm.PORT}"
    files = {
        "node_type": "1: CA",
        "node_guid": ibm.guid_text(hca.node_guid),
        "sys_image_guid": ibm.guid_text(hca.node_guid),
        "fw_ver": hca.fw_version,
        "hw_rev": hca.hw_rev,
        "board_id": hca.board_id,
        "hca_type": hca.hca_type,
        "node_desc": hca.node_desc,
        f"{port}/state": ibm.port_state_text(hca.port_state),
        f"{port}/phys_state": ibm.phys_state_text(hca.phys_state),
        f"{port}/rate": ibm.rate_text(hca.rate_gbps),
        f"{port}/lid": f"0x{hca.lid:x}",
        f"{port}/sm_lid": f"0x{hca.sm_lid:x}",
        f"{port}/sm_sl": "0",
        f"{port}/lid_mask_count": "0",
        f"{port}/cap_mask": f"0x{ibm.CAP_MASK:08x}",
        f"{port}/link_layer": hca.link_layer,
        f"{port}/gids/0": ibm.gid_text(hca.port_guid),
        f"{port}/pkeys/0": "0xffff",
        f"{port}/gid_attrs/ndevs/0": "",
        f"{port}/gid_attrs/types/0": "IB/RoCE v1",
    }
    for name in COUNTERS:
        files[f"{port}/counters/{name}"] = "0"
    return files


#: The IB preload shims this simulator stages (libmockfs is pcibus's).
IB_SHIMS = (names.IB_UMAD_LIB_FILE, names.IB_VERBS_LIB_FILE, names.IB_SYS_LIB_FILE)


def native_tree(host: Host) -> dict[str, Entry]:
    """The IB shims (whatever the profile: MOCK_IB decides what they do) and the
    node's IB tools with their libraries, under the driver tree."""
    out: dict[str, Entry] = {}
    for file in IB_SHIMS:
        data = host.native.shim(file)
        if data is not None:
            out[os.path.join(host.overlay.preload_lib, file)] = File(data, 0o755)
    for rel, data in host.native.ib_tools:
        out[host.overlay.join(rel)] = File(data, 0o755)
    return out


def tree(desired: Desired, host: Host) -> dict[str, Entry]:
    """The ib/ tree for this profile and node (empty when the profile has no HCA)."""
    root = host.overlay.ib
    hcas = ibm.hcas(desired.state.get("infiniband") or {}, desired.state.get("node_name") or "")
    if not hcas:
        return {}
    functions = hcapci.functions(desired.state)
    placed = pcitopo.placements(desired.state)
    out: dict[str, Entry] = {}

    def put(rel: str, text: str) -> None:
        out[os.path.join(root, rel)] = File(f"{text}\n".encode() if text else b"", 0o444)

    cls = "sys/class"
    put(f"{cls}/infiniband_mad/abi_version", UMAD_ABI)
    put(f"{cls}/infiniband_verbs/abi_version", UVERBS_ABI)
    for hca in hcas:
        for rel, text in hca_files(hca).items():
            put(f"{cls}/infiniband/{hca.name}/{rel}", text)
        # The HCA's PCI function as pcibus stages it in the overlay's sys/ (what libmockfs
        # shows lspci): device/vendor, device/device and device/modalias read through it.
        fn = functions[hca.index]
        class_dir = os.path.join(root, cls, "infiniband", hca.name)
        function_dir = os.path.join(host.overlay.sys, names.SYS_VIEW_DEVICES, placed[fn.bdf].path)
        out[os.path.join(class_dir, "device")] = Link(os.path.relpath(function_dir, class_dir))
        n = hca.index
        for kind in ("umad", "issm"):
            put(f"{cls}/infiniband_mad/{kind}{n}/ibdev", hca.name)
            put(f"{cls}/infiniband_mad/{kind}{n}/port", str(ibm.PORT))
            out[os.path.join(root, "dev/infiniband", f"{kind}{n}")] = File(b"", 0o666)
        put(f"{cls}/infiniband_verbs/uverbs{n}/ibdev", hca.name)
        put(f"{cls}/infiniband_verbs/uverbs{n}/abi_version", UVERBS_DEVICE_ABI)
        put(f"{cls}/infiniband_verbs/uverbs{n}/device/modalias", ibm.modalias(functions[n].device))
        out[os.path.join(root, "dev/infiniband", f"uverbs{n}")] = File(b"", 0o666)
    return out


class Ib:
    name = OWNER

    def __init__(self, host: Host):
        self.host = host
        self._readiness = Readiness()

    def stage(self, desired: Desired) -> None:
        self.host.fs.converge(OWNER, {**tree(desired, self.host), **native_tree(self.host)}, share_inodes=True)
        os.makedirs(self.host.overlay.ib, exist_ok=True)   # IB-off: an empty ib/
        self._readiness.ok()

    def discard(self) -> None:
        self.host.fs.remove_owner(OWNER)
        try:
            os.rmdir(self.host.overlay.ib)
        except OSError:
            pass                    # not empty (someone else's files) or already gone

    def ready(self) -> tuple[bool, str]:
        return self._readiness.ready()
