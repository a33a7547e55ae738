"""-q -x fidelity (the Go suite's rules) and text -q, for every built-in profile."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conftest import PROFILES

MIB = 1024 * 1024
#: Element order of a <gpu> block in nvidia-smi 580 captures (NVIDIA/k8s-test-infra
#: tests/e2e/go/assertions/nvidiasmi/testdata/qx-gb300-healthy.xml).
GPU_CHILDREN = (
    "product_name product_brand product_architecture display_mode display_attached display_active "
    "persistence_mode addressing_mode mig_mode mig_devices accounting_mode accounting_mode_buffer_size "
    "driver_model serial uuid pdi minor_number vbios_version multigpu_board board_id board_part_number "
    "gpu_part_number gpu_fru_part_number platformInfo inforom_version inforom_bbx_flush gpu_operation_mode "
    "c2c_mode gpu_virtualization_mode gpu_recovery_action gsp_firmware_version ibmnpu pci fan_speed "
    "performance_state clocks_event_reasons clocks_event_reasons_counters sparse_operation_mode "
    "fb_memory_usage bar1_memory_usage cc_protected_memory_usage compute_mode utilization encoder_stats "
    "fbc_stats dram_encryption_mode ecc_mode ecc_errors retired_pages remapped_rows temperature "
    "supported_gpu_target_temp gpu_power_readings gpu_memory_power_readings module_power_readings "
    "power_smoothing power_profiles clocks applications_clocks default_applications_clocks "
    "deferred_clocks max_clocks max_customer_boost_clocks clock_policy fabric supported_clocks "
    "processes accounted_processes capabilities").split()
#: The same of nvidia-smi 570 (hardware capture qx-a100.xml, 570.148.08), which every
#: built-in profile with a driver before 580 prints.
GPU_CHILDREN_570 = (
    "product_name product_brand product_architecture display_mode display_active "
    "persistence_mode addressing_mode mig_mode mig_devices accounting_mode accounting_mode_buffer_size "
    "driver_model serial uuid minor_number vbios_version multigpu_board board_id board_part_number "
    "gpu_part_number gpu_fru_part_number platformInfo inforom_version inforom_bbx_flush gpu_operation_mode "
    "c2c_mode gpu_virtualization_mode gpu_reset_status gpu_recovery_action gsp_firmware_version ibmnpu pci "
    "fan_speed performance_state clocks_event_reasons sparse_operation_mode "
    "fb_memory_usage bar1_memory_usage cc_protected_memory_usage compute_mode utilization encoder_stats "
    "fbc_stats dram_encryption_mode ecc_mode ecc_errors retired_pages remapped_rows temperature "
    "supported_gpu_target_temp gpu_power_readings gpu_memory_power_readings module_power_readings "
    "power_smoothing power_profiles clocks applications_clocks default_applications_clocks "
    "deferred_clocks max_clocks max_customer_boost_clocks clock_policy voltage fabric supported_clocks "
    "processes accounted_processes capabilities").split()
#: The profiles whose driver is 580 or later (gb200: 580.65.06).
DRIVER_580 = {"gb200"}


#: <board_id> of each GPU as nvidia-smi prints it: the PCI location packed
#: (domain << 16 | bus << 8 | device << 3 | function), in lower-case hex.
BOARD_IDS = {
    "a100": "0x700 0xf00 0x4700 0x4e00 0x8700 0x9000 0xb700 0xbd00",
    "h100": "0x1a00 0x1b00 0x4a00 0x4b00 0x8a00 0x8b00 0xca00 0xcb00",
    "b200": "0x1a00 0x1b00 0x4a00 0x4b00 0x8a00 0x8b00 0xca00 0xcb00",
    "gb200": "0xa00 0xb00 0x4a00 0x4b00 0x8a00 0x8b00 0xca00 0xcb00",
    "gb300": "0xa00 0xb00 0x4a00 0x4b00 0x8a00 0x8b00 0xca00 0xcb00",
    "l40s": "0x1700 0x3100 0xb100 0xca00 0x1800 0x3200 0xb200 0xcb00",
    "t4": "0x3b00 0x8600 0xaf00 0xd800",
}


def _xml(ov, dev_root, *extra):
    res = ov.run(["-q", "-x", *extra], str(dev_root))
    assert res.returncode == 0, res.stderr
    dtd = "nvsmi_device_v13.dtd" if ov.profile in DRIVER_580 else "nvsmi_device_v12.dtd"
    assert f'<!DOCTYPE nvidia_smi_log SYSTEM "{dtd}">' in res.stdout
    return ET.fromstring(res.stdout)


@pytest.mark.parametrize("profile", PROFILES)
def test_xml_follows_the_fidelity_rules(staged, dev_root, profile):
    ov = staged(profile)
    root = _xml(ov, dev_root)
    assert root.tag == "nvidia_smi_log"
    blocks = root.findall("gpu")
    assert root.findtext("attached_gpus") == str(len(blocks)) == str(len(ov.state["gpus"]))
    assert root.findtext("driver_version") == ov.state["system"]["driver_version"]
    assert [el.findtext("board_id") for el in blocks] == BOARD_IDS[profile].split()
    for gpu, el in zip(ov.state["gpus"], blocks):
        assert [c.tag for c in el] == (GPU_CHILDREN if profile in DRIVER_580 else GPU_CHILDREN_570)
        assert el.get("id") == gpu["pci"]["bus_id"]
        assert el.findtext("product_name") == gpu["name"]
        assert el.findtext("uuid") == gpu["uuid"]
        assert el.findtext("serial") == str(gpu["serial"])
        assert el.findtext("minor_number") == str(gpu["minor_number"])
        mem = gpu["memory"]
        total, reserved, used = (mem[k] // MIB for k in ("total_bytes", "reserved_bytes", "used_bytes"))
        fb = el.find("fb_memory_usage")
        assert [fb.findtext(k) for k in ("total", "reserved", "used", "free")] == [
            f"{total} MiB", f"{reserved} MiB", f"{used} MiB", f"{total - reserved - used} MiB"]
        pw = el.find("gpu_power_readings")
        assert pw.findtext("current_power_limit") == f"{gpu['power']['enforced_limit_mw'] / 1000:.2f} W"
        assert pw.findtext("max_power_limit") == f"{gpu['power']['max_limit_mw'] / 1000:.2f} W"
        dev_id = el.findtext("pci/pci_device_id")
        assert dev_id == f"{gpu['pci']['device_id']:08X}" and dev_id == dev_id.upper()
        gen = el.find("pci/pci_gpu_link_info/pcie_gen")
        assert gen.findtext("max_link_gen") == gen.findtext("max_device_link_gen") == str(gpu["pcie"]["max_link_gen"])
        assert el.findtext("c2c_mode") == ("Enabled" if profile in ("gb200", "gb300") else "N/A")
        assert el.findtext("gpu_virtualization_mode/virtualization_mode") == "None"
        temp = el.find("temperature")
        th = gpu["thermal"]
        if profile in ("a100", "t4"):
            assert temp.findtext("gpu_temp_max_threshold") == f"{th['shutdown_threshold_c']} C"
            assert temp.findtext("gpu_temp_slow_threshold") == f"{th['slowdown_threshold_c']} C"
            assert temp.findtext("gpu_temp_max_gpu_threshold") == f"{th['max_operating_c']} C"
            assert temp.find("gpu_temp_max_tlimit_threshold") is None
        else:
            assert temp.find("gpu_temp_max_threshold") is None
            assert temp.find("gpu_temp_max_tlimit_threshold") is not None
        fabric = el.find("fabric")
        if "fabric" in gpu:
            assert fabric.findtext("state") == "Completed"
            assert fabric.findtext("status") == "Success"
            assert fabric.findtext("cliqueId") == str(gpu["fabric"]["clique_id"])
            assert fabric.findtext("clusterUuid") == gpu["fabric"]["cluster_uuid"]
            if profile in DRIVER_580:              # the health summary is 580's
                assert fabric.findtext("health/summary") == "Healthy"
                assert fabric.findtext("health/incorrect_configuration") == "None"
            else:
                assert fabric.find("health/summary") is None
            assert fabric.findtext("health/bandwidth") == "Full"
        else:
            assert fabric.findtext("state") == "N/A"
        procs = el.find("processes")
        assert procs is not None and len(procs) == 0


def test_x_alone_and_x_before_q_give_the_same_document(staged, dev_root):
    ov = staged("t4")
    a = ov.run(["-x", "-q"], str(dev_root)).stdout
    b = ov.run(["-x"], str(dev_root)).stdout
    strip = lambda s: [l for l in s.splitlines() if "<timestamp>" not in l]  # noqa: E731
    assert strip(a) == strip(b)


def test_xml_id_and_display_sections(staged, dev_root):
    ov = staged("h100")
    root = _xml(ov, dev_root, "-i", "3", "-d", "MEMORY,POWER")
    (gpu,) = root.findall("gpu")
    assert gpu.get("id") == ov.state["gpus"][3]["pci"]["bus_id"]
    assert [c.tag for c in gpu] == ["fb_memory_usage", "bar1_memory_usage", "cc_protected_memory_usage",
                                    "gpu_power_readings", "gpu_memory_power_readings",
                                    "module_power_readings", "power_smoothing", "power_profiles"]


@pytest.mark.parametrize("profile", PROFILES)
def test_text_query_matches_state(staged, dev_root, profile):
    ov = staged(profile)
    res = ov.run(["-q"], str(dev_root))
    assert res.returncode == 0, res.stderr
    text = res.stdout
    assert "==============NVSMI LOG==============" in text
    rows = [l for l in text.splitlines() if " : " in l]
    pairs = [(l.split(" : ", 1)[0].strip(), l.split(" : ", 1)[1]) for l in rows]
    assert ("Attached GPUs", str(len(ov.state["gpus"]))) in pairs
    assert [v for k, v in pairs if k == "Product Name"] == [g["name"] for g in ov.state["gpus"]]
    assert [v for k, v in pairs if k == "GPU UUID"] == [g["uuid"] for g in ov.state["gpus"]]
    assert [v for k, v in pairs if k == "Bus Id"] == [g["pci"]["bus_id"] for g in ov.state["gpus"]]
    assert all(l.index(" : ") == 41 for l in rows), "colon column drifted"
    if "fabric" in ov.state["gpus"][0]:
        assert [v for k, v in pairs if k == "CliqueId"] == ["0"] * len(ov.state["gpus"])
        assert "ClusterUUID" in dict(pairs)


def test_text_display_memory_only(staged, dev_root):
    res = staged("a100").run(["-q", "-d", "MEMORY", "-i", "0"], str(dev_root))
    body = res.stdout.split("GPU 00000000:07:00.0", 1)[1]
    assert body.split()[0:3] == ["FB", "Memory", "Usage"]
    assert "Product Name" not in body and "40960 MiB" in body


def test_unknown_display_section_is_an_argument_error(staged, dev_root):
    res = staged("a100").run(["-q", "-d", "NOPE"], str(dev_root))
    assert (res.returncode, res.stdout) == (2, "Failed to parse --display/-d flags\n")
