"""Which GPUs a command shows, as NVIDIA's nvidia-smi picks them over NVML.

Measured against nvidia-smi 550 over the mock library:
- without ``-i`` a command opens every handle, and the first that NVML refuses
  ends it: "Unable to determine the device handle for GPU<i>: <NVML's error>",
  exit status 15 for a lost GPU;
- ``-i`` with indices only, all below the count: those GPUs, once each, in
  index order; a refused handle ends it as above;
- any other ``-i`` (a UUID, an index past the last GPU, a word) is a search
  through every GPU by index: the first refused handle ends it with "Problem
  with GPU <i>: <error>", exit 255; nothing found is "No devices were found",
  exit 6 (NVML_ERROR_NOT_FOUND).
"""

from __future__ import annotations

from mokka.engine import nvml
from mokka.smi.gpu import Gpu

EXIT_NOT_FOUND = 6
EXIT_UNKNOWN = 255
UNPARSABLE_IDS = "Failed to parse device string on command line"
NO_DEVICES = "No devices were found"


class Refused(Exception):
    """The command cannot go on: ``text`` for stdout, ``code`` its exit status."""

    def __init__(self, text: str, code: int):
        super().__init__(text)
        self.text = text
        self.code = code


#: nvidia-smi's own words for an NVML error where they are not nvmlErrorString's.
SMI_ERROR_TEXT = {nvml.GPU_IS_LOST: "GPU is lost.  Reboot the system to recover this GPU"}


def error_text(exc: nvml.NvmlError) -> str:
    return SMI_ERROR_TEXT.get(exc.code, str(exc))


def _nvml_exit(code: int) -> int:
    return code if 0 < code < 256 else EXIT_UNKNOWN


def handle_refused(lib: nvml.Library, index: int, exc: nvml.NvmlError) -> Refused:
    return Refused(f"Unable to determine the device handle for GPU{index}: {error_text(exc)}\n\n\n",
                   _nvml_exit(exc.code))


def open_gpu(lib: nvml.Library, index: int) -> Gpu:
    try:
        return Gpu(lib, index, lib.handle(index))
    except nvml.NvmlError as exc:
        raise handle_refused(lib, index, exc) from None


def every(lib: nvml.Library, count: int) -> list:
    return [open_gpu(lib, i) for i in range(count)]


def pick(lib: nvml.Library, count: int, ids: str) -> list:
    """The GPUs an ``-i`` value names, or Refused."""
    if not ids.replace(",", ""):
        # No item at all ("", ","): NVIDIA's parser gives up on the string itself (no newline).
        raise Refused(UNPARSABLE_IDS, EXIT_UNKNOWN)
    items = [p.strip() for p in ids.split(",") if p.strip()]
    if items and all(p.isdigit() and int(p) < count for p in items):
        return [open_gpu(lib, i) for i in sorted({int(p) for p in items})]
    on_bus = {index for index in map(lib.index_by_bus_id, (p for p in items if ":" in p)) if index is not None}
    found = []
    for i in range(count):
        try:
            gpu = Gpu(lib, i, lib.handle(i))
        except nvml.NvmlError as exc:
            raise Refused(f"Problem with GPU {i}: {error_text(exc)}\n\n\n", EXIT_UNKNOWN) from None
        if i in on_bus or any(_names(gpu, item) for item in items):
            found.append(gpu)
    if not found:
        raise Refused(NO_DEVICES + "\n", EXIT_NOT_FOUND)
    return found


def _names(gpu: Gpu, item: str) -> bool:
    """An index or a UUID (a PCI bus id is the library's to resolve: Library.index_by_bus_id)."""
    if item.isdigit():
        return int(item) == gpu.index
    return item.lower() == (gpu.uuid() or "").lower()
