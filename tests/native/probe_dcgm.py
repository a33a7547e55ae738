"""Runs inside a process that loads the mock libnvidia-ml.so.1: calls each NVML function of
a list through ctypes with arguments made from its prototype in nvml.h, as DCGM would.

    probe_dcgm.py HEADER LIST

HEADER is the nvml.h the library is built from (read here, never kept in the repository);
LIST one function name a line. The calls newer than HEADER are read from the library's own
declarations of them (NEWER_HEADERS, NVIDIA's published layouts). Each argument comes from its parameter's kind: nvmlDevice_t is
GPU 0's handle (a MIG device's handle for the calls that take one, when GPU 0 has one), a GPU
or compute instance handle is GPU 0's first, an integer is 0 (an index, an enum's first value)
or a buffer's size when its name says count, size or length, a pointer is a zeroed buffer of
ample size whose first word is the struct's version (NVML_STRUCT_VERSION, compiled from
HEADER, or a plain macro for GPM support) when nvml.h gives the struct one. Setters get
the board's current value, so they succeed; after a setter with a getter, that getter's answer is
kept as its read-back. nvmlDeviceGetFieldValues asks for a few fields nvml.h names (FIELDS),
since field id 0 names none. Destroying and shutdown calls come last.

Prints one JSON object: name -> {"rc": code, "out": [per buffer argument {"u32", "u64", "u32s"
(its first WORDS words), "str"}], and for a setter with a getter "after": [the getter's buffers,
described the same way]}; a name the library does not export has rc null; one HEADER lacks,
rc "undeclared".
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NVML_SRC = os.path.join(HERE, "..", "..", "native", "nvml")
#: The library's declarations of NVML calls newer than the pinned nvml.h.
NEWER_HEADERS = tuple(os.path.join(NVML_SRC, "api", name)
                      for name in ("platform_info.h", "board_info.h", "nvml_newer.h"))
BUF = 1 << 16
WORDS = 128
HANDLES = {"nvmlDevice_t", "nvmlGpuInstance_t", "nvmlComputeInstance_t", "nvmlEventSet_t", "nvmlUnit_t",
           "nvmlGpmSample_t", "nvmlVgpuInstance_t", "nvmlVgpuTypeId_t", "nvmlSystemEventSet_t"}
#: Calls whose natural target on a MIG-enabled GPU is a MIG device.
MIG_TARGET = {"nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
              "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "nvmlDeviceIsMigDeviceHandle",
              "nvmlDeviceGetAttributes", "nvmlDeviceGetAttributes_v2"}
LAST = ("nvmlComputeInstanceDestroy", "nvmlGpuInstanceDestroy", "nvmlShutdown")
#: The system event set calls that take a set inside their request: the request's type.
SYSTEM_EVENT_REQUESTS = {"nvmlSystemEventSetFree": "nvmlSystemEventSetFreeRequest_t",
                         "nvmlSystemRegisterEvents": "nvmlSystemRegisterEventRequest_t",
                         "nvmlSystemEventSetWait": "nvmlSystemEventSetWaitRequest_t"}
SIZE_NAME = re.compile(r"(count|size|length|len)$", re.I)
#: Structs whose version is a plain macro rather than NVML_STRUCT_VERSION.
PLAIN_VERSIONS = {"nvmlGpmSupport_t": "NVML_GPM_SUPPORT_VERSION"}
#: The fields asked of nvmlDeviceGetFieldValues, in this order.
FIELDS = ("NVML_FI_DEV_ECC_CURRENT", "NVML_FI_DEV_ECC_PENDING", "NVML_FI_DEV_ECC_DBE_VOL_TOTAL",
          "NVML_FI_DEV_MEMORY_TEMP", "NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "NVML_FI_DEV_NVLINK_LINK_COUNT",
          "NVML_FI_DEV_PCIE_REPLAY_COUNTER", "NVML_FI_DEV_POWER_INSTANT")
FIELD_VALUE_BYTES = 40              # nvmlFieldValue_t: fieldId, scopeId, 2 x 64-bit times, type, return, value
#: setter -> (its getter, the getter's arguments after the device, None for a buffer), read back after the set.
READ_BACK = {
    "nvmlDeviceSetPowerManagementLimit": ("nvmlDeviceGetPowerManagementLimit", ()),
    "nvmlDeviceSetPersistenceMode": ("nvmlDeviceGetPersistenceMode", ()),
    "nvmlDeviceSetComputeMode": ("nvmlDeviceGetComputeMode", ()),
    "nvmlDeviceSetAccountingMode": ("nvmlDeviceGetAccountingMode", ()),
    "nvmlDeviceSetEccMode": ("nvmlDeviceGetEccMode", (None,)),
    "nvmlDeviceSetApplicationsClocks": ("nvmlDeviceGetApplicationsClock", (0,)),
    "nvmlDeviceResetApplicationsClocks": ("nvmlDeviceGetApplicationsClock", (0,)),
    "nvmlDeviceSetAPIRestriction": ("nvmlDeviceGetAPIRestriction", (0,)),
    "nvmlDeviceSetMigMode": ("nvmlDeviceGetMigMode", (None,)),
    "nvmlDeviceSetGpcClkVfOffset": ("nvmlDeviceGetGpcClkVfOffset", ()),
    "nvmlDeviceSetMemClkVfOffset": ("nvmlDeviceGetMemClkVfOffset", ()),
    "nvmlDeviceClearEccErrorCounts": ("nvmlDeviceGetTotalEccErrors", (0, 0)),
    "nvmlDeviceClearAccountingPids": ("nvmlDeviceGetAccountingPids", (None,)),
    "nvmlDeviceResetNvLinkErrorCounters": ("nvmlDeviceGetNvLinkErrorCounter", (0, 0)),
}


def prototypes(text: str) -> dict[str, list[tuple[str, str]]]:
    """name -> [(type, parameter name)] of every nvmlReturn_t function nvml.h declares."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    found = {}
    for name, params in re.findall(r"nvmlReturn_t\s+DECLDIR\s+(\w+)\s*\(([^)]*)\)\s*;", text):
        args = []
        for p in params.split(","):
            p = " ".join(p.split())
            if not p or p == "void":
                continue
            m = re.match(r"(.*?)(\w+)(\[\d*\])?$", p)
            typ, pname = m.group(1).strip(), m.group(2)
            if m.group(3):
                typ += " *"
            args.append((typ.replace(" *", "*").replace("* ", "*"), pname))
        found[name] = args
    return found


def struct_versions(header: str, text: str) -> dict[str, int]:
    """struct type name (nvmlMemory_v2_t, and its plain alias) -> its version word."""
    macros = re.findall(r"#define\s+(nvml\w+_v\d+)\s+NVML_STRUCT_VERSION\(", text)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "v.c")
        with open(src, "w") as f:
            f.write('#include <stdio.h>\n#include "nvml.h"\n')
            f.writelines(f'#include "{h}"\n' for h in NEWER_HEADERS)
            f.write("int main(void){\n")
            for m in macros:
                f.write(f'printf("{m} %u\\n", (unsigned){m});\n')
            f.write("return 0;}\n")
        exe = os.path.join(tmp, "v")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}   # a sanitizer run's runtime
        subprocess.run(["cc", "-I", os.path.dirname(header), "-I", NVML_SRC, src, "-o", exe], check=True, env=env)
        out = subprocess.run([exe], capture_output=True, text=True, check=True, env=env).stdout
    versions = {name: int(v, 0) for name, macro in PLAIN_VERSIONS.items()
                for v in re.findall(rf"#define\s+{macro}\s+(\w+)", text)}
    for line in out.splitlines():
        macro, value = line.split()
        versions[macro + "_t"] = int(value)
    for alias, target in re.findall(r"typedef\s+(nvml\w+_v\d+_t)\s+(nvml\w+_t)\s*;", text):
        if alias in versions:
            versions[target] = versions[alias]
    return versions


class Caller:
    def __init__(self, lib, protos, versions, fields):
        self.lib, self.protos, self.versions, self.fields = lib, protos, versions, fields
        self.handles = {}

    def fn(self, name):
        try:
            f = getattr(self.lib, name)
        except AttributeError:
            return None
        f.restype = ctypes.c_int
        return f

    def raw(self, name, *args):
        return self.fn(name)(*args)

    def setup(self):
        self.raw("nvmlInit_v2")
        dev = ctypes.c_void_p()
        self.raw("nvmlDeviceGetHandleByIndex_v2", 0, ctypes.byref(dev))
        self.handles["nvmlDevice_t"] = dev
        mig = ctypes.c_void_p()
        if self.raw("nvmlDeviceGetMigDeviceHandleByIndex", dev, 0, ctypes.byref(mig)) == 0:
            self.handles["mig"] = mig
            gi_id, ci_id = ctypes.c_uint(), ctypes.c_uint()
            self.raw("nvmlDeviceGetGpuInstanceId", mig, ctypes.byref(gi_id))
            self.raw("nvmlDeviceGetComputeInstanceId", mig, ctypes.byref(ci_id))
            gi, ci = ctypes.c_void_p(), ctypes.c_void_p()
            self.raw("nvmlDeviceGetGpuInstanceById", dev, gi_id, ctypes.byref(gi))
            self.raw("nvmlGpuInstanceGetComputeInstanceById", gi, ci_id, ctypes.byref(ci))
            self.handles["nvmlGpuInstance_t"], self.handles["nvmlComputeInstance_t"] = gi, ci
        es = ctypes.c_void_p()
        self.raw("nvmlEventSetCreate", ctypes.byref(es))
        self.handles["nvmlEventSet_t"] = es

    def read_uint(self, name, *args):
        v = ctypes.c_uint()
        return v.value if self.raw(name, self.handles["nvmlDevice_t"], *args, ctypes.byref(v)) == 0 else 0

    def read_uint_of(self, name, handle):
        v = ctypes.c_uint()
        return v.value if self.raw(name, handle, ctypes.byref(v)) == 0 else 0

    def setter_args(self, name):
        """The board's current value for the setters, so the call succeeds; the real clock or
        instance id for the lookups a zero cannot name."""
        dev = self.handles["nvmlDevice_t"]
        if name == "nvmlDeviceSetPowerManagementLimit":
            return [dev, self.read_uint("nvmlDeviceGetPowerManagementLimit")]
        if name == "nvmlDeviceSetPersistenceMode":
            return [dev, self.read_uint("nvmlDeviceGetPersistenceMode")]
        if name == "nvmlDeviceSetComputeMode":
            return [dev, self.read_uint("nvmlDeviceGetComputeMode")]
        if name == "nvmlDeviceSetAccountingMode":
            return [dev, self.read_uint("nvmlDeviceGetAccountingMode")]
        if name == "nvmlDeviceSetEccMode":
            cur, pend = ctypes.c_uint(), ctypes.c_uint()
            self.raw("nvmlDeviceGetEccMode", dev, ctypes.byref(cur), ctypes.byref(pend))
            return [dev, pend.value]
        if name == "nvmlDeviceSetApplicationsClocks":
            return [dev, self.read_uint("nvmlDeviceGetApplicationsClock", 2),
                    self.read_uint("nvmlDeviceGetApplicationsClock", 0)]
        if name in ("nvmlDeviceSetGpuLockedClocks", "nvmlDeviceSetMemoryLockedClocks"):
            clock = self.read_uint("nvmlDeviceGetMaxClockInfo", 0 if "Gpu" in name else 2)
            return [dev, clock, clock]
        if name == "nvmlDeviceGetSupportedGraphicsClocks":
            return [dev, self.read_uint("nvmlDeviceGetMaxClockInfo", 2), ctypes.byref(ctypes.c_uint(1024)),
                    ctypes.create_string_buffer(BUF)]
        if name == "nvmlDeviceGetGpuInstanceById" and "mig" in self.handles:
            return [dev, self.read_uint_of("nvmlDeviceGetGpuInstanceId", self.handles["mig"]),
                    ctypes.create_string_buffer(BUF)]
        if name == "nvmlDeviceGetFieldValues":
            values = ctypes.create_string_buffer(BUF)
            for i, field in enumerate(self.fields):
                ctypes.c_uint.from_buffer(values, i * FIELD_VALUE_BYTES).value = field
            return [dev, ctypes.c_int(len(self.fields)), values]
        if name in ("nvmlDeviceGetGpuInstances", "nvmlDeviceGetGpuInstanceRemainingCapacity") and "mig" in self.handles:
            info = ctypes.create_string_buffer(BUF)          # the 1-slice profile: its id leads the struct
            self.raw("nvmlDeviceGetGpuInstanceProfileInfo", dev, 0, info)
            profile = ctypes.c_uint.from_buffer(info).value
            if name == "nvmlDeviceGetGpuInstanceRemainingCapacity":
                return [dev, profile, ctypes.create_string_buffer(BUF)]
            count = ctypes.create_string_buffer(BUF)
            ctypes.c_uint.from_buffer(count).value = 1024
            return [dev, profile, ctypes.create_string_buffer(BUF), count]
        if name in SYSTEM_EVENT_REQUESTS:
            return [self.system_request(name)]
        if name == "nvmlDeviceSetMigMode":
            mode = self.read_uint("nvmlDeviceGetMigMode", ctypes.byref(ctypes.c_uint()))
            return [dev, mode, ctypes.byref(ctypes.c_uint())]
        return None

    def system_request(self, name):
        """A request naming a live system event set (a wait of 0 ms), version word first."""
        create = ctypes.create_string_buffer(BUF)
        ctypes.c_uint.from_buffer(create).value = self.versions["nvmlSystemEventSetCreateRequest_t"]
        self.raw("nvmlSystemEventSetCreate", create)
        live = ctypes.c_void_p.from_buffer(create, 8).value
        request = ctypes.create_string_buffer(BUF)
        ctypes.c_uint.from_buffer(request).value = self.versions[SYSTEM_EVENT_REQUESTS[name]]
        ctypes.c_void_p.from_buffer(request, 16 if name == "nvmlSystemRegisterEvents" else 8).value = live
        if name == "nvmlSystemRegisterEvents":
            ctypes.c_ulonglong.from_buffer(request, 8).value = 3      # driver unbind and bind
        return request

    def args(self, name):
        special = self.setter_args(name)
        if special is not None:
            return special, [a for a in special if isinstance(a, ctypes.Array)]
        args, outs = [], []
        for typ, pname in self.protos[name]:
            bare = typ.replace("const ", "").strip()
            if bare in HANDLES:
                key = "mig" if bare == "nvmlDevice_t" and name in MIG_TARGET and "mig" in self.handles else bare
                args.append(self.handles.get(key, ctypes.c_void_p()))
            elif bare.endswith("*"):
                buf = ctypes.create_string_buffer(BUF)
                pointee = bare.rstrip("*").strip()
                if pointee in self.versions:
                    ctypes.c_uint.from_buffer(buf).value = self.versions[pointee]
                elif pointee == "unsigned int" and SIZE_NAME.search(pname):
                    ctypes.c_uint.from_buffer(buf).value = 1024
                args.append(buf)
                if not typ.startswith("const"):
                    outs.append(buf)
            elif SIZE_NAME.search(pname) and "long" not in bare:
                args.append(ctypes.c_uint(256 if "length" in pname.lower() or "size" in pname.lower() else 32))
            elif "long long" in bare:
                args.append(ctypes.c_ulonglong(0))
            else:
                args.append(ctypes.c_uint(0))
        return args, outs

    def call(self, name):
        if name not in self.protos:
            return {"rc": "undeclared"}
        f = self.fn(name)
        if f is None:
            return {"rc": None}
        if name == "nvmlEventSetFree":
            es = ctypes.c_void_p()
            self.raw("nvmlEventSetCreate", ctypes.byref(es))
            return {"rc": f(es), "out": []}
        args, outs = self.args(name)
        rc = f(*args)
        result = {"rc": rc, "out": [describe(b) for b in outs]}
        if name in READ_BACK:
            result["after"] = self.read_back(*READ_BACK[name])
        return result

    def read_back(self, getter, extra):
        """The getter's buffers after a setter (empty when the getter fails)."""
        args, outs = [self.handles["nvmlDevice_t"]], []
        for arg in (*extra, None):
            if arg is None:
                outs.append(ctypes.create_string_buffer(BUF))
                args.append(outs[-1])
            else:
                args.append(ctypes.c_uint(arg))
        if getter == "nvmlDeviceGetAccountingPids":            # (device, count in/out, pids)
            ctypes.c_uint.from_buffer(outs[0]).value = 1024
        return [describe(b) for b in outs] if self.raw(getter, *args) == 0 else []


def describe(buf) -> dict:
    raw = buf.raw
    text = raw.split(b"\0")[0]
    return {"u32": int.from_bytes(raw[:4], "little"), "u64": int.from_bytes(raw[:8], "little"),
            "u32s": [int.from_bytes(raw[i:i + 4], "little") for i in range(0, 4 * WORDS, 4)],
            "str": text.decode() if text and text.isascii() and text.decode().isprintable() else ""}


def main(header: str, listing: str) -> None:
    text = ""
    for path in (header, *NEWER_HEADERS):
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n"
    with open(listing, encoding="utf-8") as f:
        names = sorted({line.split("#", 1)[0].strip() for line in f} - {""})
    fields = [int(re.search(rf"#define\s+{f}\s+(\d+)", text).group(1)) for f in FIELDS]
    caller = Caller(ctypes.CDLL("libnvidia-ml.so.1"), prototypes(text), struct_versions(header, text), fields)
    caller.setup()
    order = [n for n in names if n not in LAST] + [n for n in LAST if n in names]
    results = {}
    for name in order:
        print(name, file=sys.stderr, flush=True)
        results[name] = caller.call(name)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
