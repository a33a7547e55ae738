"""The MIG devices NVML reports, read by the node agent through the mock library.

The library is the one engine: the agent never reads the partition state itself, it
asks NVML, as the device plugin does (go-nvlib's walk: every GPU whose current MIG
mode is enabled, its MIG device handles by index up to the maximum, NOT_FOUND and
INVALID_ARGUMENT skipped; then each handle's UUID, GPU instance and compute
instance). The walk runs in a child process (``python -m mokka.agent.migdevices
LIBRARY``) with the staged profile and every GPU visible: the library reads files a
workload can write, and neither a crash nor a stall of it may take the agent down.
The child prints one JSON document; the parent bounds and checks it.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

from mokka.core import names
from mokka.core.mig import MigDevice

#: nvmlDeviceGetMigMode's current mode for MIG on (NVML_DEVICE_MIG_ENABLE).
MIG_ENABLE = 1
#: The most MIG devices a node can report, and the bytes their JSON may take.
MAX_DEVICES = names.MAX_GPUS * names.MIG_GPU_INSTANCE_IDS * names.MIG_COMPUTE_INSTANCE_IDS
MAX_OUTPUT = 4 << 20
TIMEOUT_S = 10.0
#: The library's visibility rules are for workloads; the agent renders every device.
_CALLER_ENV = ("MOCK_", names.ENV_NODE_NAME, names.ENV_LD_PRELOAD, names.ENV_LD_LIBRARY_PATH)


class ReadError(Exception):
    """The devices could not be read: one line naming why."""


def walk(lib) -> list[MigDevice]:
    """Every MIG device of every GPU ``lib`` (mokka.engine.nvml.Library, initialised) shows."""
    from mokka.engine import nvml

    found = []
    for index in range(lib.count()):
        try:
            parent = lib.handle(index)
        except nvml.NvmlError:
            continue                          # a lost GPU has no MIG devices to hand out
        current, pending = ctypes.c_uint(0), ctypes.c_uint(0)
        if lib.ask("nvmlDeviceGetMigMode", parent, ctypes.byref(current), ctypes.byref(pending)) \
                != nvml.SUCCESS or current.value != MIG_ENABLE:
            continue
        minor, most = ctypes.c_uint(0), ctypes.c_uint(0)
        lib.call("nvmlDeviceGetMinorNumber", parent, ctypes.byref(minor))
        lib.call("nvmlDeviceGetMaxMigDeviceCount", parent, ctypes.byref(most))
        for j in range(min(most.value, names.MIG_GPU_INSTANCE_IDS * names.MIG_COMPUTE_INSTANCE_IDS)):
            handle = ctypes.c_void_p()
            code = lib.ask("nvmlDeviceGetMigDeviceHandleByIndex", parent, ctypes.c_uint(j),
                           ctypes.byref(handle))
            if code in (nvml.NOT_FOUND, nvml.INVALID_ARGUMENT):
                continue
            if code != nvml.SUCCESS:
                raise nvml.NvmlError(code, f"GPU {index} MIG device {j}: {lib.error_string(code)}")
            gi, ci = ctypes.c_uint(0), ctypes.c_uint(0)
            uuid = lib.string("nvmlDeviceGetUUID", handle, size=nvml.UUID_SIZE)
            lib.call("nvmlDeviceGetGpuInstanceId", handle, ctypes.byref(gi))
            lib.call("nvmlDeviceGetComputeInstanceId", handle, ctypes.byref(ci))
            found.append(MigDevice(index, minor.value, j, uuid, gi.value, ci.value))
    return found


def read(library: str, profile: str, timeout: float = TIMEOUT_S) -> list[MigDevice]:
    """The MIG devices the mock library at ``library`` reports for the node whose staged
    profile is ``profile``; ReadError when the child fails or says something malformed."""
    from mokka.agent.supervisor import python_argv

    argv, env = python_argv("mokka.agent.migdevices", library)
    env = {k: v for k, v in env.items() if not k.startswith(_CALLER_ENV)}
    env.update({names.ENV_NVML_CONFIG: profile, names.ENV_NVML_VISIBLE_DEVICES: names.VISIBLE_ALL})
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ReadError(f"the MIG device walk over {library} took over {timeout:g}s") from None
    except OSError as exc:
        raise ReadError(f"cannot run the MIG device walk: {exc.strerror or exc}") from None
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise ReadError(f"the MIG device walk over {library} failed ({done.returncode}): {why[:300]}")
    return parse(done.stdout)


def parse(output: bytes) -> list[MigDevice]:
    """The child's JSON, checked field by field (ReadError naming the first fault)."""
    if len(output) > MAX_OUTPUT:
        raise ReadError(f"the MIG device walk printed {len(output)} bytes; at most {MAX_OUTPUT}")
    try:
        rows = json.loads(output)
    except ValueError as exc:
        raise ReadError(f"the MIG device walk printed no JSON: {exc}") from None
    if not isinstance(rows, list) or len(rows) > MAX_DEVICES:
        raise ReadError("the MIG device walk printed no list of devices")
    devices = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == len(MigDevice._fields)
                and all(type(v) is int and v >= 0 for v in row[:3] + row[4:])
                and isinstance(row[3], str) and row[3].startswith("MIG-") and len(row[3]) < 96
                and row[3].isprintable() and "/" not in row[3]):
            raise ReadError(f"the MIG device walk printed a malformed device: {str(row)[:120]}")
        devices.append(MigDevice(*row))
    return devices


def main(argv: list[str]) -> int:
    from mokka.engine import nvml

    if len(argv) != 2:
        print("usage: python -m mokka.agent.migdevices LIBRARY", file=sys.stderr)
        return 2
    try:
        lib = nvml.Library(argv[1])
        lib.init()
        devices = walk(lib)
    except (nvml.LibraryError, nvml.NvmlError) as exc:
        print(f"mokka.agent.migdevices: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps([list(d) for d in devices]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
