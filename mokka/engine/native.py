"""Where the native libraries built from native/ are (the mock NVML and CUDA libraries, the shims).

Two homes, in this order: the package's own ``mokka/_native/<arch>/`` (the
zipapp and an installed package carry it there: ./shivfile puts it in), then the
work tree's ``build/native/<arch>/`` (what ``python3 native/build.py`` writes).
Import-light on purpose (os and names only): the agent asks once at start.
"""

from __future__ import annotations

import os

from mokka.core import names

LIBRARY = names.NVML_LIB_FILE

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../mokka
_REPO = os.path.dirname(_PACKAGE)


def nvml_library(arch: str | None = None) -> str | None:
    """The built library for ``arch`` (default: this machine's), or None if absent."""
    return library(LIBRARY, arch)


def cuda_library(arch: str | None = None) -> str | None:
    """The built mock CUDA driver for ``arch`` (default: this machine's), or None if absent."""
    return library(names.CUDA_LIB_FILE, arch)


def library(file: str, arch: str | None = None) -> str | None:
    """The built native library ``file`` (e.g. names.FS_LIB_FILE) for ``arch``, or None."""
    arch = arch or os.uname().machine
    for folder in (os.path.join(_PACKAGE, "_native", arch),
                   os.path.join(_REPO, "build", "native", arch)):
        path = os.path.join(folder, file)
        if os.path.isfile(path):
            return path
    return None


def carried_arches() -> tuple[str, ...]:
    """The architectures this package carries native libraries for (mokka/_native/<arch>/):
    those ./shivfile was asked to build; () for a work tree."""
    try:
        found = os.listdir(os.path.join(_PACKAGE, "_native"))
    except OSError:
        return ()
    return tuple(a for a in names.NATIVE_ARCHES if a in found)


def foreign_build(arch: str | None = None) -> str | None:
    """One line when this package carries native libraries, but none for ``arch``
    (default: this machine's): a zipapp built on another machine, or for other arches."""
    arch = arch or os.uname().machine
    carried = carried_arches()
    if not carried or arch in carried:
        return None
    which = f"{arch} (this machine)" if arch == os.uname().machine else arch
    return (f"this Mokka carries native libraries for {' and '.join(carried)} only, not for "
            f"{which}: build it on a {arch} machine, or with {names.ENV_ARCHES}={names.ARCHES_ALL} "
            "./shivfile")
