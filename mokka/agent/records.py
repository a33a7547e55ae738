"""The node's CUDA process records (driver/config/processes): the agent's sweep of the dead ones.

Every CUDA process of the node keeps a record per GPU there, locked for its life
(native/nvml/processes.c). A process that dies leaves its file behind; readers no
longer count it, but nothing removes it unless its writer's user writes again.
The agent, root on the host, removes them all: through the mock library's own
``nvmlMokkaSweepProcessRecords``, so the one rule of what a live record is stays
in the library (a record no open file description holds on byte 0; a temp file of
a writer killed mid-update), and links are never followed.
"""

from __future__ import annotations

import ctypes
import os

SWEEP = "nvmlMokkaSweepProcessRecords"


class RecordsError(OSError):
    """The records directory could not be swept: the directory and the reason, one line."""


def sweep(library_path: str, records_dir: str) -> int:
    """Remove the records and stale temp files in ``records_dir`` that no live process
    holds, of every owner this process may remove; return how many it removed.

    ``library_path`` is the mock ``libnvidia-ml.so.1`` to ask. RecordsError (an OSError
    with the errno) when the directory cannot be read: missing, a link, not a directory.
    """
    lib = ctypes.CDLL(library_path, use_errno=True)
    try:
        fn = getattr(lib, SWEEP)
    except AttributeError:
        raise RecordsError(f"{library_path} is not Mokka's NVML library: it has no {SWEEP}") from None
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = ctypes.c_int
    removed = fn(os.fsencode(records_dir))
    if removed < 0:
        err = ctypes.get_errno()
        raise RecordsError(err, f"cannot sweep the CUDA process records: {os.strerror(err)}", records_dir)
    return removed
