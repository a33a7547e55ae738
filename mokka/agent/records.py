"""The node's CUDA process records (driver/config/processes): the agent's sweep.

Every CUDA process of the node keeps a record per GPU in its user's directory there
(``processes/<uid>``), locked for its life (native/nvml/api/processes.c). A process that
dies leaves its file behind; readers no longer count it, but nothing removes it
unless its writer's user writes again. And anything a workload put in
``processes/`` that is not a user's directory (a file, a link, a directory named for
another user) is a stray no reader opens, which could only pile up. The agent, root
on the host, removes both: the strays as the mock library's
``nvmlMokkaProcessRecordsStray`` names them, and the dead records through its
``nvmlMokkaSweepProcessRecords``, so the rules of what a user's directory and a live
record are stay in the library. Links are never followed.
"""

from __future__ import annotations

import ctypes
import os

from mokka.core import fsutil

SWEEP = "nvmlMokkaSweepProcessRecords"
STRAY = "nvmlMokkaProcessRecordsStray"
#: Entries of the records directory looked at per sweep: a safety bound only.
ENTRIES_MAX = 1 << 20


class RecordsError(OSError):
    """The records directory could not be swept: the directory and the reason, one line."""


def _function(lib: ctypes.CDLL, library_path: str, name: str):
    try:
        return getattr(lib, name)
    except AttributeError:
        raise RecordsError(f"{library_path} is not Mokka's NVML library: it has no {name}") from None


def sweep(library_path: str, records_dir: str) -> int:
    """Remove what in ``records_dir`` is not a user's directory, and the records and stale
    temp files in each user's directory that no live process holds, of every owner this
    process may remove; return how many entries it removed.

    ``library_path`` is the mock ``libnvidia-ml.so.1`` to ask. RecordsError (an OSError
    with the errno) when the directory cannot be read: missing, a link, not a directory.
    A stray that cannot be removed is left for the next sweep.
    """
    lib = ctypes.CDLL(library_path, use_errno=True)
    sweep_dead, stray = _function(lib, library_path, SWEEP), _function(lib, library_path, STRAY)
    sweep_dead.argtypes, sweep_dead.restype = [ctypes.c_char_p], ctypes.c_int
    stray.argtypes, stray.restype = [ctypes.c_int, ctypes.c_char_p], ctypes.c_int
    try:
        top = os.open(records_dir, fsutil.DIR_NOFOLLOW)
    except OSError as exc:
        raise RecordsError(exc.errno, f"cannot sweep the CUDA process records: {exc.strerror}",
                           records_dir) from None
    removed = 0
    try:
        with os.scandir(top) as listing:
            for seen, entry in enumerate(listing):
                if seen >= ENTRIES_MAX:
                    break
                if stray(top, os.fsencode(entry.name)) != 1:
                    continue
                try:
                    removed += fsutil.remove_at(top, entry.name)
                except OSError:
                    continue                        # busy or vanished: the next sweep tries again
        dead = sweep_dead(os.fsencode(records_dir))
    finally:
        os.close(top)
    if dead < 0:
        err = ctypes.get_errno()
        raise RecordsError(err, f"cannot sweep the CUDA process records: {os.strerror(err)}", records_dir)
    return removed + dead
