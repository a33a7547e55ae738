"""NVML's structs as ctypes types, for mokka.smi.gpu (layouts from nvml.h; the later
ones, marked, from newer NVML headers)."""

from __future__ import annotations

import ctypes as C

from mokka.engine import nvml

VALUE_DOUBLE, VALUE_UINT, VALUE_ULONG, VALUE_ULONGLONG, VALUE_SLONGLONG, VALUE_SINT = 0, 1, 2, 3, 4, 5


def struct_version(ctype, version: int) -> int:
    """NVML_STRUCT_VERSION: the struct's size with the version in the top byte."""
    return C.sizeof(ctype) | (version << 24)


class PciInfo(C.Structure):
    _fields_ = [("busIdLegacy", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint),
                ("device", C.c_uint), ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint),
                ("busId", C.c_char * nvml.BUS_ID_SIZE)]


class PciInfoExt(C.Structure):
    _fields_ = [("version", C.c_uint), ("domain", C.c_uint), ("bus", C.c_uint), ("device", C.c_uint),
                ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint), ("baseClass", C.c_uint),
                ("subClass", C.c_uint), ("busId", C.c_char * nvml.BUS_ID_SIZE)]


class Memory(C.Structure):
    _fields_ = [("version", C.c_uint), ("total", C.c_ulonglong), ("reserved", C.c_ulonglong),
                ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class Bar1(C.Structure):
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class Utilization(C.Structure):
    _fields_ = [("gpu", C.c_uint), ("memory", C.c_uint)]


class FbcStats(C.Structure):
    _fields_ = [("sessions", C.c_uint), ("fps", C.c_uint), ("latency", C.c_uint)]


class ProcessInfo(C.Structure):
    _fields_ = [("pid", C.c_uint), ("usedGpuMemory", C.c_ulonglong), ("gpuInstanceId", C.c_uint),
                ("computeInstanceId", C.c_uint)]


class FabricInfo(C.Structure):
    """nvmlGpuFabricInfo_v3_t (NVML 12.8): v2 and the health summary."""
    _fields_ = [("version", C.c_uint), ("clusterUuid", C.c_ubyte * 16), ("status", C.c_int),
                ("cliqueId", C.c_uint), ("state", C.c_ubyte), ("healthMask", C.c_uint),
                ("healthSummary", C.c_ubyte)]


class C2cMode(C.Structure):
    _fields_ = [("enabled", C.c_uint)]


class PlatformInfo(C.Structure):
    """nvmlPlatformInfo_v2_t (NVML 12.6 and later)."""
    _fields_ = [("version", C.c_uint), ("ibGuid", C.c_ubyte * 16), ("chassisSerialNumber", C.c_ubyte * 16),
                ("slotNumber", C.c_ubyte), ("trayIndex", C.c_ubyte), ("hostId", C.c_ubyte),
                ("peerType", C.c_ubyte), ("moduleId", C.c_ubyte)]


class Memory1(C.Structure):
    """nvmlMemory_t (v1): what nvmlDeviceGetConfComputeProtectedMemoryUsage fills."""
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class VersionedValue(C.Structure):
    """nvmlDeviceAddressingMode_v1_t and nvmlDeviceCapabilities_v1_t (NVML 13): a version and one word."""
    _fields_ = [("version", C.c_uint), ("value", C.c_uint)]


class Pdi(C.Structure):
    """nvmlPdi_v1_t (NVML 13)."""
    _fields_ = [("version", C.c_uint), ("value", C.c_ulonglong)]


class RepairStatus(C.Structure):
    """nvmlRepairStatus_v1_t (NVML 13)."""
    _fields_ = [("version", C.c_uint), ("channel", C.c_uint), ("tpc", C.c_uint)]


class RowRemapperHistogram(C.Structure):
    _fields_ = [(k, C.c_uint) for k in ("max", "high", "partial", "low", "none")]


class SramEccStatus(C.Structure):
    """nvmlEccSramErrorStatus_v1_t."""
    _fields_ = [("version", C.c_uint)] + [(k, C.c_ulonglong) for k in (
        "aggregateUncParity", "aggregateUncSecDed", "aggregateCor", "volatileUncParity",
        "volatileUncSecDed", "volatileCor", "aggregateUncBucketL2", "aggregateUncBucketSm",
        "aggregateUncBucketPcie", "aggregateUncBucketMcu", "aggregateUncBucketOther")] + [
        ("bThresholdExceeded", C.c_uint)]


class FieldValue(C.Structure):
    _fields_ = [("fieldId", C.c_uint), ("scopeId", C.c_uint), ("timestamp", C.c_longlong),
                ("latencyUsec", C.c_longlong), ("valueType", C.c_int), ("nvmlReturn", C.c_int),
                ("value", C.c_ubyte * 8)]


def field_value(f: "FieldValue"):
    raw = bytes(f.value)
    if f.valueType in (VALUE_UINT, VALUE_SINT):
        return int.from_bytes(raw[:4], "little", signed=f.valueType == VALUE_SINT)
    if f.valueType == VALUE_SLONGLONG:
        return int.from_bytes(raw, "little", signed=True)
    if f.valueType in (VALUE_ULONG, VALUE_ULONGLONG):
        return int.from_bytes(raw, "little")
    if f.valueType == VALUE_DOUBLE:
        return C.c_double.from_buffer_copy(raw).value
    return None




class DeviceAttributes(C.Structure):
    """nvmlDeviceAttributes_t: what a MIG device has of its GPU instance."""
    _fields_ = [(k, C.c_uint) for k in (
        "multiprocessorCount", "sharedCopyEngineCount", "sharedDecoderCount", "sharedEncoderCount",
        "sharedJpegCount", "sharedOfaCount", "gpuInstanceSliceCount", "computeInstanceSliceCount")] + [
        ("memorySizeMB", C.c_ulonglong)]


class Placement(C.Structure):
    """nvmlGpuInstancePlacement_t and nvmlComputeInstancePlacement_t."""
    _fields_ = [("start", C.c_uint), ("size", C.c_uint)]


class GpuInstanceProfileInfo(C.Structure):
    """nvmlGpuInstanceProfileInfo_v3_t."""
    _fields_ = [(k, C.c_uint) for k in (
        "version", "id", "sliceCount", "instanceCount", "multiprocessorCount", "copyEngineCount",
        "decoderCount", "encoderCount", "jpegCount", "ofaCount")] + [
        ("memorySizeMB", C.c_ulonglong), ("name", C.c_char * nvml.STRING_SIZE), ("capabilities", C.c_uint)]


class GpuInstanceInfo(C.Structure):
    _fields_ = [("device", C.c_void_p), ("id", C.c_uint), ("profileId", C.c_uint), ("placement", Placement)]


class ComputeInstanceProfileInfo(C.Structure):
    """nvmlComputeInstanceProfileInfo_v3_t: its engines are shared with the GPU instance."""
    _fields_ = [(k, C.c_uint) for k in (
        "version", "id", "sliceCount", "instanceCount", "multiprocessorCount", "sharedCopyEngineCount",
        "sharedDecoderCount", "sharedEncoderCount", "sharedJpegCount", "sharedOfaCount")] + [
        ("name", C.c_char * nvml.STRING_SIZE), ("capabilities", C.c_uint)]


class ComputeInstanceInfo(C.Structure):
    _fields_ = [("device", C.c_void_p), ("gpuInstance", C.c_void_p), ("id", C.c_uint), ("profileId", C.c_uint),
                ("placement", Placement)]


class ProcessUtilizationSample(C.Structure):
    _fields_ = [("pid", C.c_uint), ("timeStamp", C.c_ulonglong), ("smUtil", C.c_uint), ("memUtil", C.c_uint),
                ("encUtil", C.c_uint), ("decUtil", C.c_uint)]


class AccountingStats(C.Structure):
    _fields_ = [("gpuUtilization", C.c_uint), ("memoryUtilization", C.c_uint), ("maxMemoryUsage", C.c_ulonglong),
                ("time", C.c_ulonglong), ("startTime", C.c_ulonglong), ("isRunning", C.c_uint),
                ("reserved", C.c_uint * 5)]


class ViolationTime(C.Structure):
    _fields_ = [("referenceTime", C.c_ulonglong), ("violationTime", C.c_ulonglong)]


#: nvml.h's NVML_GPM_METRIC_MAX: the size of nvmlGpmMetricsGet_t's array (NVML_GPM_METRICS_GET_VERSION 1).
GPM_METRIC_MAX = 98
GPM_METRICS_GET_VERSION = GPM_SUPPORT_VERSION = 1


class GpmSupport(C.Structure):
    _fields_ = [("version", C.c_uint), ("isSupportedDevice", C.c_uint)]


class GpmMetricInfo(C.Structure):
    _fields_ = [("shortName", C.c_char_p), ("longName", C.c_char_p), ("unit", C.c_char_p)]


class GpmMetric(C.Structure):
    _fields_ = [("metricId", C.c_uint), ("nvmlReturn", C.c_int), ("value", C.c_double),
                ("metricInfo", GpmMetricInfo)]


class GpmMetricsGet(C.Structure):
    _fields_ = [("version", C.c_uint), ("numMetrics", C.c_uint), ("sample1", C.c_void_p),
                ("sample2", C.c_void_p), ("metrics", GpmMetric * GPM_METRIC_MAX)]
