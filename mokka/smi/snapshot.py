"""The ``nvidia-smi -q -x`` report of any NVML library: what ``mokka profile capture
--from-nvml`` reads, through the same report (and then the same parser) as a
capture of the XML NVIDIA's nvidia-smi printed.

The library is loaded as any NVML (mokka.engine.nvml.Library's ``any_nvml``): a real
node's own, or a staged mock. Only NVML's public calls are made of a library that
is not the mock, and the report leaves out the rows only an export table gives
(what is unknown is not N/A).
"""

from __future__ import annotations

import time

from mokka.smi import devices, report, values
from mokka.engine import nvml


def report_xml(path: str) -> str:
    """The report of every GPU the library at ``path`` sees; LibraryError or NvmlError
    (one line) when it cannot be loaded or refuses a GPU."""
    lib = nvml.Library(path, any_nvml=True)
    lib.init()
    try:
        count = lib.count()
        try:
            gpus = devices.every(lib, count)
        except devices.Refused as refused:
            raise nvml.LibraryError(refused.text.strip()) from None
        head = {"driver_version": lib.system_string("nvmlSystemGetDriverVersion"),
                "cuda_version": lib.cuda_version(), "attached": count}
        stamp = time.strftime(values.TIMESTAMP_FORMAT)
        return report.render_xml(gpus, head, stamp, without=() if lib.is_mock else report.EXPORT_TABLE_ROWS)
    finally:
        lib.shutdown()
