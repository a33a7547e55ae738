"""``nvidia-smi -q`` as text: the report tree with nvidia-smi's labels and layout."""

from __future__ import annotations

from mokka.smi import layouts, report

#: Colon column of nvidia-smi's text report.
COLON = 42

LABELS = {
    "product_name": "Product Name", "product_brand": "Product Brand",
    "product_architecture": "Product Architecture", "display_mode": "Display Mode",
    "display_attached": "Display Attached", "display_active": "Display Active",
    "persistence_mode": "Persistence Mode", "addressing_mode": "Addressing Mode",
    "mig_mode": "MIG Mode", "current_mig": "Current", "pending_mig": "Pending",
    "mig_devices": "MIG Devices",
    "accounting_mode": "Accounting Mode", "accounting_mode_buffer_size": "Accounting Mode Buffer Size",
    "driver_model": "Driver Model", "current_dm": "Current", "pending_dm": "Pending",
    "serial": "Serial Number", "uuid": "GPU UUID", "pdi": "GPU PDI", "minor_number": "Minor Number",
    "vbios_version": "VBIOS Version", "multigpu_board": "MultiGPU Board", "board_id": "Board ID",
    "board_part_number": "Board Part Number", "gpu_part_number": "GPU Part Number",
    "gpu_fru_part_number": "FRU Part Number", "platformInfo": "Platform Info",
    "chassis_serial_number": "Chassis Serial Number", "slot_number": "Slot Number",
    "tray_index": "Tray Index", "host_id": "Host ID", "peer_type": "Peer Type",
    "module_id": "Module Id", "gpu_fabric_guid": "GPU Fabric GUID",
    "inforom_version": "Inforom Version", "img_version": "Image Version", "oem_object": "OEM Object",
    "ecc_object": "ECC Object", "pwr_object": "Power Management Object",
    "inforom_bbx_flush": "Inforom BBX Object Flush", "latest_timestamp": "Latest Timestamp",
    "latest_duration": "Latest Duration", "gpu_operation_mode": "GPU Operation Mode",
    "current_gom": "Current", "pending_gom": "Pending", "c2c_mode": "C2C Mode",
    "gpu_virtualization_mode": "GPU Virtualization Mode", "virtualization_mode": "Virtualization Mode",
    "host_vgpu_mode": "Host VGPU Mode", "vgpu_heterogeneous_mode": "vGPU Heterogeneous Mode",
    "gpu_recovery_action": "GPU Recovery Action", "gsp_firmware_version": "GSP Firmware Version",
    "ibmnpu": "IBMNPU", "relaxed_ordering_mode": "Relaxed Ordering Mode",
    "pci": "PCI", "pci_bus": "Bus", "pci_device": "Device", "pci_domain": "Domain",
    "pci_base_class": "Base Classcode", "pci_sub_class": "Sub Classcode",
    "pci_device_id": "Device Id", "pci_bus_id": "Bus Id", "pci_sub_system_id": "Sub System Id",
    "pci_gpu_link_info": "GPU Link Info", "pcie_gen": "PCIe Generation", "max_link_gen": "Max",
    "current_link_gen": "Current", "device_current_link_gen": "Device Current",
    "max_device_link_gen": "Device Max", "max_host_link_gen": "Host Max",
    "link_widths": "Link Width", "max_link_width": "Max", "current_link_width": "Current",
    "pci_bridge_chip": "Bridge Chip", "bridge_chip_type": "Type", "bridge_chip_fw": "Firmware",
    "replay_counter": "Replays Since Reset", "replay_rollover_counter": "Replay Number Rollovers",
    "tx_util": "Tx Throughput", "rx_util": "Rx Throughput",
    "atomic_caps_outbound": "Atomic Caps Outbound", "atomic_caps_inbound": "Atomic Caps Inbound",
    "fan_speed": "Fan Speed", "performance_state": "Performance State",
    "clocks_event_reasons": "Clocks Event Reasons",
    "clocks_event_reason_gpu_idle": "Idle",
    "clocks_event_reason_applications_clocks_setting": "Applications Clocks Setting",
    "clocks_event_reason_sw_power_cap": "SW Power Cap",
    "clocks_event_reason_hw_slowdown": "HW Slowdown",
    "clocks_event_reason_hw_thermal_slowdown": "HW Thermal Slowdown",
    "clocks_event_reason_hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "clocks_event_reason_sync_boost": "Sync Boost",
    "clocks_event_reason_sw_thermal_slowdown": "SW Thermal Slowdown",
    "clocks_event_reason_display_clocks_setting": "Display Clock Setting",
    "clocks_event_reasons_counters": "Clocks Event Reasons Counters",
    "clocks_event_reasons_counters_sw_power_cap": "SW Power Capping",
    "clocks_event_reasons_counters_sync_boost": "Sync Boost",
    "clocks_event_reasons_counters_sw_therm_slowdown": "SW Thermal Slowdown",
    "clocks_event_reasons_counters_hw_therm_slowdown": "HW Thermal Slowdown",
    "clocks_event_reasons_counters_hw_power_brake": "HW Power Braking",
    "sparse_operation_mode": "Sparse Operation Mode",
    "fb_memory_usage": "FB Memory Usage", "bar1_memory_usage": "BAR1 Memory Usage",
    "cc_protected_memory_usage": "Conf Compute Protected Memory Usage",
    "total": "Total", "reserved": "Reserved", "used": "Used", "free": "Free",
    "compute_mode": "Compute Mode", "utilization": "Utilization", "gpu_util": "GPU",
    "memory_util": "Memory", "encoder_util": "Encoder", "decoder_util": "Decoder",
    "jpeg_util": "JPEG", "ofa_util": "OFA", "encoder_stats": "Encoder Stats",
    "fbc_stats": "FBC Stats", "session_count": "Active Sessions", "average_fps": "Average FPS",
    "average_latency": "Average Latency", "dram_encryption_mode": "DRAM Encryption Mode",
    "current_dram_encryption": "Current", "pending_dram_encryption": "Pending",
    "ecc_mode": "ECC Mode", "current_ecc": "Current", "pending_ecc": "Pending",
    "ecc_errors": "ECC Errors", "volatile": "Volatile", "aggregate": "Aggregate",
    "sram_correctable": "SRAM Correctable", "sram_uncorrectable_parity": "SRAM Uncorrectable Parity",
    "sram_uncorrectable_secded": "SRAM Uncorrectable SEC-DED",
    "dram_correctable": "DRAM Correctable", "dram_uncorrectable": "DRAM Uncorrectable",
    "sram_threshold_exceeded": "SRAM Threshold Exceeded",
    "aggregate_uncorrectable_sram_sources": "Aggregate Uncorrectable SRAM Sources",
    "sram_l2": "SRAM L2", "sram_sm": "SRAM SM", "sram_microcontroller": "SRAM Microcontroller",
    "sram_pcie": "SRAM PCIE", "sram_other": "SRAM Other",
    "channel_repair_pending": "Channel Repair Pending", "tpc_repair_pending": "TPC Repair Pending",
    "unrepairable_memory": "Unrepairable Memory", "sram_uncorrectable": "SRAM Uncorrectable",
    "remapped_row_corr_inactive": "Correctable Error (Inactive)",
    "remapped_row_unc_inactive": "Uncorrectable Error (Inactive)",
    "gpu_reset_status": "GPU Reset Status", "reset_required": "Reset Required",
    "drain_and_reset_recommended": "Drain and Reset Recommended",
    "voltage": "Voltage", "graphics_volt": "Graphics", "edpp_multiplier": "EDPp Multiplier",
    "partition_assigned": "Partition Assigned",
    "retired_pages": "Retired Pages",
    "multiple_single_bit_retirement": "Single Bit ECC", "double_bit_retirement": "Double Bit ECC",
    "retired_count": "Count", "retired_pagelist": "Pages",
    "pending_blacklist": "Pending Page Blacklist", "pending_retirement": "Pending Page Retirement",
    "remapped_rows": "Remapped Rows", "remapped_row_corr": "Correctable Error",
    "remapped_row_unc": "Uncorrectable Error", "remapped_row_pending": "Pending",
    "remapped_row_failure": "Remapping Failure Occurred",
    "row_remapper_histogram": "Bank Remap Availability Histogram",
    "row_remapper_histogram_max": "Max", "row_remapper_histogram_high": "High",
    "row_remapper_histogram_partial": "Partial", "row_remapper_histogram_low": "Low",
    "row_remapper_histogram_none": "None",
    "temperature": "Temperature", "gpu_temp": "GPU Current Temp",
    "gpu_temp_tlimit": "GPU T.Limit Temp",
    "gpu_temp_max_threshold": "GPU Shutdown Temp", "gpu_temp_slow_threshold": "GPU Slowdown Temp",
    "gpu_temp_max_gpu_threshold": "GPU Max Operating Temp",
    "gpu_temp_max_tlimit_threshold": "GPU Shutdown T.Limit Temp",
    "gpu_temp_slow_tlimit_threshold": "GPU Slowdown T.Limit Temp",
    "gpu_temp_max_gpu_tlimit_threshold": "GPU Max Operating T.Limit Temp",
    "gpu_target_temperature": "GPU Target Temperature", "memory_temp": "Memory Current Temp",
    "gpu_temp_max_mem_threshold": "Memory Max Operating Temp",
    "gpu_temp_max_mem_tlimit_threshold": "Memory Max Operating T.Limit Temp",
    "supported_gpu_target_temp": "Supported GPU Target Temp",
    "gpu_target_temp_min": "GPU Target Temp Min", "gpu_target_temp_max": "GPU Target Temp Max",
    "gpu_power_readings": "GPU Power Readings", "gpu_memory_power_readings": "GPU Memory Power Readings",
    "module_power_readings": "Module Power Readings", "power_state": "Power State",
    "average_power_draw": "Average Power Draw", "instant_power_draw": "Instantaneous Power Draw",
    "current_power_limit": "Current Power Limit", "requested_power_limit": "Requested Power Limit",
    "default_power_limit": "Default Power Limit", "min_power_limit": "Min Power Limit",
    "max_power_limit": "Max Power Limit", "power_smoothing": "Power Smoothing",
    "power_profiles": "Workload Power Profiles",
    "power_profile_requested_profiles": "Requested Profiles",
    "power_profile_enforced_profiles": "Enforced Profiles",
    "clocks": "Clocks", "applications_clocks": "Applications Clocks",
    "default_applications_clocks": "Default Applications Clocks", "deferred_clocks": "Deferred Clocks",
    "max_clocks": "Max Clocks", "max_customer_boost_clocks": "Max Customer Boost Clocks",
    "clock_policy": "Clock Policy", "graphics_clock": "Graphics", "sm_clock": "SM",
    "mem_clock": "Memory", "video_clock": "Video", "auto_boost": "Auto Boost",
    "auto_boost_default": "Auto Boost Default",
    "fabric": "Fabric", "state": "State", "status": "Status", "cliqueId": "CliqueId",
    "clusterUuid": "ClusterUUID", "health": "Health", "summary": "Summary",
    "bandwidth": "Bandwidth", "route_recovery_in_progress": "Route Recovery in progress",
    "route_unhealthy": "Route Unhealthy", "access_timeout_recovery": "Access Timeout Recovery",
    "incorrect_configuration": "Incorrect Configuration",
    "supported_clocks": "Supported Clocks", "supported_mem_clock": "Memory",
    "value": "Memory", "supported_graphics_clock": "Graphics",
    "processes": "Processes", "process_info": "Process", "gpu_instance_id": "GPU instance ID",
    "compute_instance_id": "Compute instance ID", "pid": "Process ID", "type": "Type",
    "process_name": "Name", "used_memory": "Used GPU Memory",
    "accounted_processes": "Accounted Processes", "capabilities": "Capabilities", "egm": "EGM",
}


#: Labels within a MIG device, where nvidia-smi words some tags otherwise than elsewhere.
MIG_DEVICE_LABELS = {
    "mig_device": "MIG Device", "index": "Index", "gpu_instance_id": "GPU Instance ID",
    "compute_instance_id": "Compute Instance ID", "device_attributes": "Device Attributes", "shared": "Shared",
    "multiprocessor_count": "Multiprocessor count", "copy_engine_count": "Copy Engine count",
    "encoder_count": "Encoder count", "decoder_count": "Decoder count", "ofa_count": "OFA count",
    "jpg_count": "JPG count", "ecc_error_count": "ECC Errors", "volatile_count": "Volatile",
    "sram_uncorrectable": "SRAM Uncorrectable", "bar1_memory_usage": "BAR1 Memory",
}

#: An accounted process's rows (-q -d ACCOUNTING).
ACCOUNTED_LABELS = {"gpu_util": "GPU Utilization", "memory_util": "Memory Utilization",
                    "max_memory_usage": "Max memory usage", "time": "Time", "is_running": "Is Running"}

#: Rows the text report prints as hex with a 0x prefix where the XML has bare hex.
HEX_ROWS = {"pci_bus", "pci_device", "pci_domain", "pci_base_class", "pci_sub_class",
            "pci_device_id", "pci_sub_system_id"}


def _label(tag: str, labels: dict = LABELS) -> str:
    return labels.get(tag) or tag.replace("_", " ").title()


def _row(depth: int, label: str, value: str) -> str:
    indent = "    " * depth
    return f"{indent}{label:<{COLON - len(indent)}}: {value}"


def _nodes(nodes: list, depth: int, out: list, labels: dict = LABELS) -> None:
    for tag, value in nodes:
        if tag == "mig_devices" and isinstance(value, list):
            _nodes(value, depth, out)             # each "MIG Device" at the GPU's own depth
        elif tag == "mig_device":
            out.append("    " * depth + MIG_DEVICE_LABELS[tag])
            _nodes(value, depth + 1, out, {**LABELS, **MIG_DEVICE_LABELS})
        elif tag == "accounted_process_info":     # its pid heads it, the rest one level in
            out.append(_row(depth, "Process ID", value[0][1]))
            _nodes(value[1:], depth + 1, out, {**LABELS, **ACCOUNTED_LABELS})
        elif isinstance(value, list):
            out.append("    " * depth + _label(tag, labels))
            _nodes(value, depth + 1, out, labels)
        elif value.strip() == "" or "\n" in value:       # containers printed empty in XML
            text = value.strip()
            if tag == "processes":
                out.append(_row(depth, _label(tag, labels), "None"))
            elif tag == "retired_pagelist":
                out.append(_row(depth, _label(tag, labels), text.replace("\n", ", ").replace("\t", "") or "None"))
            else:
                out.append(_row(depth, _label(tag, labels), text or "None"))
        elif tag in HEX_ROWS and value[:1].isalnum() and not value.startswith("N/A"):
            out.append(_row(depth, _label(tag, labels), "0x" + value))
        else:
            out.append(_row(depth, _label(tag, labels), value))


def render(gpus: list, head: dict, timestamp: str, tags: tuple = ()) -> str:
    """``head`` as report.render_xml takes it."""
    layout = layouts.for_driver(head["driver_version"])
    out = ["", "==============NVSMI LOG==============", "",
           _row(0, "Timestamp", timestamp),
           _row(0, "Driver Version", head["driver_version"] or "N/A"),
           _row(0, "CUDA Version", head["cuda_version"] or "N/A"), "",
           _row(0, "Attached GPUs", str(head["attached"]))]
    for gpu in gpus:
        out.append(f"GPU {gpu.bus_id()}")
        _nodes(report.keep_sections(report.gpu_tree(gpu, layout), tags), 1, out)
        out.append("")
    return "\n".join(out) + "\n"
