"""Runs inside a process that loads the mock libnvidia-ml.so.1 (LD_LIBRARY_PATH): what the
readers DCGM asks of a GPU answer, through pynvml.

    readers_probe.py readers INDEX                    every reader of GPU INDEX, by name
    readers_probe.py samples INDEX TYPE LAST_SEEN     nvmlDeviceGetSamples: [value type,
                                                      [[timestamp, value], ...]]
    readers_probe.py processes INDEX                  nvmlDeviceGetProcessUtilization(0):
                                                      [[pid, timestamp, sm, mem, enc, dec], ...]
    readers_probe.py processes-info INDEX             nvmlDeviceGetProcessesUtilizationInfo(0): the
                                                      same, then jpeg, ofa

Prints one JSON document; an NVML error is ["err", code].
"""

from __future__ import annotations

import json
import sys

import pynvml as n


def call(fn, *args):
    try:
        return fn(*args)
    except n.NVMLError as e:
        return ["err", e.value]


def struct(value, fields):
    return value if isinstance(value, list) else {f: getattr(value, f) for f in fields}


def thermal(h):
    got = n.c_nvmlGpuThermalSettings_t()
    err = call(n.nvmlDeviceGetThermalSettings, h, n.NVML_THERMAL_TARGET_ALL, n.byref(got))
    if isinstance(err, list):
        return err
    return {"count": got.count, "sensors": [[s.controller, s.defaultMinTemp, s.defaultMaxTemp, s.currentTemp,
                                             s.target] for s in got.sensor[:got.count]]}


def dynamic_pstates(h):
    got = n.c_nvmlGpuDynamicPstatesInfo_t()
    err = call(n.nvmlDeviceGetDynamicPstatesInfo, h, n.byref(got))
    if isinstance(err, list):
        return err
    return [[u.bIsPresent, u.percentage, u.incThreshold, u.decThreshold] for u in got.utilization]


def min_max(h, clock: int, pstate: int):
    lo, hi = n.c_uint(), n.c_uint()
    err = call(n.nvmlDeviceGetMinMaxClockOfPState, h, clock, pstate, n.byref(lo), n.byref(hi))
    return err if isinstance(err, list) else [lo.value, hi.value]


def readers(h) -> dict:
    return {
        "PcieSpeed": call(n.nvmlDeviceGetPcieSpeed, h),
        "PcieLinkMaxSpeed": call(n.nvmlDeviceGetPcieLinkMaxSpeed, h),
        "BusType": call(n.nvmlDeviceGetBusType, h),
        "IrqNum": call(n.nvmlDeviceGetIrqNum, h),
        "PowerSource": call(n.nvmlDeviceGetPowerSource, h),
        "SupportedPerformanceStates": call(n.nvmlDeviceGetSupportedPerformanceStates, h),
        "MinMaxClockOfPState": {name: min_max(h, clock, n.NVML_PSTATE_0)
                                for name, clock in (("graphics", n.NVML_CLOCK_GRAPHICS), ("sm", n.NVML_CLOCK_SM),
                                                    ("memory", n.NVML_CLOCK_MEM), ("video", n.NVML_CLOCK_VIDEO))},
        "MinMaxClockOfP8": min_max(h, n.NVML_CLOCK_GRAPHICS, n.NVML_PSTATE_8),
        "ThermalSettings": thermal(h),
        "EncoderCapacity": call(n.nvmlDeviceGetEncoderCapacity, h, n.NVML_ENCODER_QUERY_H264),
        "DetailedEccErrors": struct(call(n.nvmlDeviceGetDetailedEccErrors, h, n.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                         n.NVML_VOLATILE_ECC), ("l1Cache", "l2Cache", "deviceMemory", "registerFile")),
        "DynamicPstatesInfo": dynamic_pstates(h),
        "UtilizationRates": struct(call(n.nvmlDeviceGetUtilizationRates, h), ("gpu", "memory")),
        "AdaptiveClockInfoStatus": call(n.nvmlDeviceGetAdaptiveClockInfoStatus, h),
        "InforomConfigurationChecksum": call(n.nvmlDeviceGetInforomConfigurationChecksum, h),
        "ValidateInforom": call(n.nvmlDeviceValidateInforom, h),
        "BridgeChipInfo": struct(call(n.nvmlDeviceGetBridgeChipInfo, h), ("bridgeCount",)),
        "NvLinkErrorCounter": [call(n.nvmlDeviceGetNvLinkErrorCounter, h, 0, c)
                               for c in range(n.NVML_NVLINK_ERROR_DL_ECC_DATA + 1)],
        "NvLinkErrorCounterNoLink": call(n.nvmlDeviceGetNvLinkErrorCounter, h, 63, 0),
        "ResetNvLinkErrorCounters": call(n.nvmlDeviceResetNvLinkErrorCounters, h, 0),
        "GetNvLinkUtilizationControl": struct(call(n.nvmlDeviceGetNvLinkUtilizationControl, h, 0, 0), ("units",)),
        "SetNvLinkUtilizationControl": call(n.nvmlDeviceSetNvLinkUtilizationControl, h, 0, 0,
                                            n.nvmlNvLinkUtilizationControl_t(), True),
        "GetNvLinkUtilizationCounter": call(n.nvmlDeviceGetNvLinkUtilizationCounter, h, 0, 0),
        "ResetNvLinkUtilizationCounter": call(n.nvmlDeviceResetNvLinkUtilizationCounter, h, 0, 0),
        "FreezeNvLinkUtilizationCounter": call(n.nvmlDeviceFreezeNvLinkUtilizationCounter, h, 0, 0, 1),
    }


def samples(h, kind: int, last_seen: int):
    got = call(n.nvmlDeviceGetSamples, h, kind, last_seen)
    if got[0] == "err":
        return got
    value_type, items = got
    return [value_type, [[s.timeStamp, s.sampleValue.uiVal] for s in items]]


def processes(h):
    got = call(n.nvmlDeviceGetProcessUtilization, h, 0)
    if got and got[0] == "err":
        return got
    return [[p.pid, p.timeStamp, p.smUtil, p.memUtil, p.encUtil, p.decUtil] for p in got]


def processes_info(h):
    got = call(n.nvmlDeviceGetProcessesUtilizationInfo, h, 0)
    if got and got[0] == "err":
        return got
    return [[p.pid, p.timeStamp, p.smUtil, p.memUtil, p.encUtil, p.decUtil, p.jpgUtil, p.ofaUtil] for p in got]


def main(argv: list[str]) -> None:
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(int(argv[1]))
    if argv[0] == "readers":
        out = readers(h)
    elif argv[0] == "samples":
        out = samples(h, int(argv[2]), int(argv[3]))
    elif argv[0] == "processes":
        out = processes(h)
    else:
        out = processes_info(h)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
