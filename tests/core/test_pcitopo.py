"""Where the PCIe bridges above each GPU and HCA sit (mokka.core.pcitopo), from compiled
states built here: the sysfs path each device gets, the bridges' ids and bus numbers."""

from __future__ import annotations

from mokka.core import pcitopo


def gpu(bdf: str, root: str = "pci0000:00", numa: int = 0) -> dict:
    domain, bus = int(bdf[:4], 16), int(bdf[5:7], 16)
    return {"pci": {"bdf": bdf, "domain": domain, "bus": bus}, "root_complex": root, "numa_node": numa}


def state(gpus: list[dict], hcas: int = 0, roots=None) -> dict:
    return {"gpus": gpus, "infiniband": {"enabled": hcas > 0, "hca_count": hcas, "hca_type": "MT4129"},
            "pcie_topology": {"root_complexes": roots or []}}


def paths(st: dict) -> dict[str, str]:
    return {bdf: place.path for bdf, place in pcitopo.placements(st).items()}


def test_each_gpu_gets_a_root_port_and_a_switch_on_the_buses_below_it():
    assert paths(state([gpu("0000:3b:00.0"), gpu("0000:86:00.0"), gpu("0000:cb:00.0", "pci0000:80", 1)])) == {
        "0000:3b:00.0": "pci0000:00/0000:00:01.0/0000:39:00.0/0000:3a:00.0/0000:3b:00.0",
        "0000:86:00.0": "pci0000:00/0000:00:02.0/0000:84:00.0/0000:85:00.0/0000:86:00.0",
        "0000:cb:00.0": "pci0000:80/0000:80:01.0/0000:c9:00.0/0000:ca:00.0/0000:cb:00.0"}


def test_a_gpus_hca_sits_on_the_next_downstream_port_of_its_switch():
    st = state([gpu("0000:1a:00.0"), gpu("0000:1b:00.0")], hcas=2)
    assert paths(st) == {
        "0000:1a:00.0": "pci0000:00/0000:00:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0",
        "0000:1c:00.0": "pci0000:00/0000:00:01.0/0000:18:00.0/0000:19:01.0/0000:1c:00.0",
        # 19 and 18 are GPU 0's switch's: GPU 1's takes the next free ones below.
        "0000:1b:00.0": "pci0000:00/0000:00:02.0/0000:16:00.0/0000:17:00.0/0000:1b:00.0",
        "0000:1d:00.0": "pci0000:00/0000:00:02.0/0000:16:00.0/0000:17:01.0/0000:1d:00.0"}


def test_the_bridges_read_as_pcie_ports_with_their_bus_ranges():
    place = pcitopo.placements(state([gpu("0000:1a:00.0", numa=1)], hcas=1))["0000:1b:00.0"]
    assert [(b.bdf, b.role, hex(b.vendor), hex(b.device), b.primary, b.secondary, b.subordinate, b.numa_node)
            for b in place.bridges] == [
        ("0000:00:01.0", "root port", "0x8086", "0x2030", 0x00, 0x18, 0x1b, 1),
        ("0000:18:00.0", "upstream port", "0x1000", "0xc030", 0x18, 0x19, 0x1b, 1),
        ("0000:19:01.0", "downstream port", "0x1000", "0xc030", 0x19, 0x1b, 0x1b, 1)]
    assert place.bridge_path(1) == "pci0000:00/0000:00:01.0/0000:18:00.0"


def test_a_gpu_on_bus_1_takes_its_switchs_buses_from_above():
    assert paths(state([gpu("0000:01:00.0")])) == {
        "0000:01:00.0": "pci0000:00/0000:00:01.0/0000:02:00.0/0000:03:00.0/0000:01:00.0"}


def test_a_node_without_gpus_gives_each_hca_a_switch_under_the_first_root_complex():
    st = state([], hcas=2, roots=[{"id": "pci0000:40", "numa_node": 2}])
    assert paths(st) == {
        "0000:41:00.0": "pci0000:40/0000:40:01.0/0000:3e:00.0/0000:3f:00.0/0000:41:00.0",
        "0000:42:00.0": "pci0000:40/0000:40:02.0/0000:3c:00.0/0000:3d:00.0/0000:42:00.0"}
    assert {b.numa_node for p in pcitopo.placements(st).values() for b in p.bridges} == {2}


def test_a_domain_out_of_bus_numbers_puts_each_device_on_a_root_port_of_its_own():
    # 64 GPUs (01..40) and 128 HCAs (41..c0) in one domain: 63 buses free (c1..ff), room
    # for the switches of GPUs 01..1f only (two buses each, c1 up). GPUs 20..40 and their
    # HCAs (two each) take 99 root ports after those 31: GPU 40's is the 128th on bus 00,
    # past its 31 devices: 0e.6.
    gpus = [gpu(f"0000:{bus:02x}:00.0") for bus in range(0x01, 0x41)]
    placed = pcitopo.placements(state(gpus, hcas=128))
    assert len(placed) == 192 and len({p.path for p in placed.values()}) == 192
    assert placed["0000:1f:00.0"].path == "pci0000:00/0000:00:1f.0/0000:fd:00.0/0000:fe:00.0/0000:1f:00.0"
    assert placed["0000:20:00.0"].path == "pci0000:00/0000:00:01.1/0000:20:00.0"
    assert placed["0000:40:00.0"].path == "pci0000:00/0000:00:0e.6/0000:40:00.0"
    assert [(b.secondary, b.subordinate) for b in placed["0000:40:00.0"].bridges] == [(0x40, 0x40)]
    ports = {p.bridges[0].bdf for p in placed.values()}
    assert len(ports) == len({p.bridges[0] for p in placed.values()})      # no port named twice
