"""The mock NVML library, through ctypes: where Mokka's own tools get what a process sees.

nvidia-smi, check-fabric and ``mokka ctl`` are clients of the one engine, the
mock ``libnvidia-ml.so.1`` (native/nvml): it decides which GPUs this process
sees and every reading of them, as it does for NVIDIA's nvidia-smi, pynvml and
the device plugin. Nothing here knows a rule about the node; this module loads
the library, calls it and turns its return codes into exceptions.

Which library: beside the running entry point when it is staged
(``<driver root>/usr/bin/X`` -> ``<driver root>/usr/lib64/libnvidia-ml.so.1``,
which is also where the CDI spec mounts the pair in a container), else the one
this package carries for the machine's architecture (mokka.engine.native: the
zipapp's own, or a checkout's build). A library without Mokka's private calls is
not the mock and is refused, so a real driver is never driven by mistake; only
``mokka profile capture --from-nvml`` asks for any NVML library (``any_nvml``).

Import-light: ctypes and the names only (nvidia-smi runs every few seconds).
"""

from __future__ import annotations

import ctypes
import os

from mokka.core import names

# Return codes (nvml.h), the ones Mokka's tools tell apart.
SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
DRIVER_NOT_LOADED = 9
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
IN_USE = 19
INSUFFICIENT_RESOURCES = 23
DEPRECATED = 26
#: The errors nvidia-smi prints as their text where the value would be (N/A for the rest).
SHOWN_ERRORS = (NO_PERMISSION, DEPRECATED)

STRING_SIZE = 96            # NVML_DEVICE_NAME_V2_BUFFER_SIZE: the largest string a query returns
UUID_SIZE = 80              # NVML_DEVICE_UUID_V2_BUFFER_SIZE
BUS_ID_SIZE = 32            # NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE


class NvmlError(Exception):
    def __init__(self, code: int, text: str):
        super().__init__(text)
        self.code = code


class LibraryError(Exception):
    """No mock library to load: one line for the user."""


def _not_found(*args) -> int:
    return FUNCTION_NOT_FOUND


def library_path(argv0: str | None) -> str:
    """The mock library this process should load (see the module's docstring)."""
    if argv0:
        here = os.path.dirname(os.path.abspath(argv0))
        bin_tail = os.path.join("usr", "bin")
        if here.endswith(os.sep + bin_tail):
            staged = os.path.join(os.path.dirname(here), "lib64", names.NVML_LIB_FILE)
            if os.path.isfile(staged):
                return staged
    from mokka.engine import native

    found = native.nvml_library()
    if found is None and (foreign := native.foreign_build()) is not None:
        raise LibraryError(foreign)
    if found is None:
        raise LibraryError(f"no mock {names.NVML_LIB_FILE} for {os.uname().machine}: build it with "
                           "'python3 native/build.py', or run the nvidia-smi staged in the overlay")
    return found


class Library:
    """One loaded library; its functions are looked up once, on first use.

    The mock, unless ``any_nvml``: then any NVML library, NVIDIA's real one included
    (``mokka profile capture --from-nvml`` reads a real node through it). Such a
    library is only asked NVML's public calls: Mokka's private calls and the export
    table, whose slots are those of one driver, are the mock's alone."""

    def __init__(self, path: str, any_nvml: bool = False):
        self.path = path
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as exc:
            raise LibraryError(f"cannot load {path}: {exc}") from None
        self.is_mock = hasattr(self._lib, "nvmlMokkaGetNodePath")
        if not self.is_mock and not any_nvml:
            raise LibraryError(f"{path} is not Mokka's mock NVML library (no nvmlMokkaGetNodePath)")
        if not hasattr(self._lib, "nvmlInit_v2"):
            raise LibraryError(f"{path} is not an NVML library (no nvmlInit_v2)")
        self._fns: dict = {}

    def fn(self, name: str):
        """The function ``name``; one answering FUNCTION_NOT_FOUND when the library lacks it,
        as NVIDIA's tools treat a name they cannot resolve."""
        f = self._fns.get(name)
        if f is None:
            try:
                f = getattr(self._lib, name)
                f.restype = ctypes.c_int
            except AttributeError:
                f = _not_found
            self._fns[name] = f
        return f

    def error_string(self, code: int) -> str:
        f = self._fns.get("nvmlErrorString")
        if f is None:
            f = self._lib.nvmlErrorString
            f.restype = ctypes.c_char_p
            f.argtypes = [ctypes.c_int]
            self._fns["nvmlErrorString"] = f
        return (f(code) or b"Unknown Error").decode(errors="replace")

    def call(self, name: str, *args) -> None:
        """Call an NVML function; NvmlError unless it succeeds."""
        code = self.fn(name)(*args)
        if code != SUCCESS:
            raise NvmlError(code, self.error_string(code))

    def ask(self, name: str, *args) -> int:
        """Call an NVML function and return its code (the caller tells them apart)."""
        return self.fn(name)(*args)

    # --- the calls every client makes ------------------------------------------------

    def init(self) -> None:
        self.call("nvmlInit_v2")

    def shutdown(self) -> None:
        self.ask("nvmlShutdown")

    def count(self) -> int:
        n = ctypes.c_uint(0)
        self.call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        return n.value

    def handle(self, index: int) -> ctypes.c_void_p:
        """The handle of visible GPU ``index``; NvmlError(GPU_IS_LOST) for a lost one."""
        h = ctypes.c_void_p()
        self.call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(h))
        return h

    def index_by_bus_id(self, bus_id: str) -> int | None:
        """The visible index of the GPU at a PCI bus id, as NVML resolves one; None if none."""
        h, index = ctypes.c_void_p(), ctypes.c_uint(0)
        if self.ask("nvmlDeviceGetHandleByPciBusId_v2", bus_id.encode(), ctypes.byref(h)) != SUCCESS:
            return None
        return index.value if self.ask("nvmlDeviceGetIndex", h, ctypes.byref(index)) == SUCCESS else None

    def string(self, name: str, *args, size: int = STRING_SIZE) -> str:
        buf = ctypes.create_string_buffer(size)
        self.call(name, *args, buf, ctypes.c_uint(size))
        return buf.value.decode(errors="replace")

    def system_string(self, name: str) -> str | None:
        try:
            return self.string(name)
        except NvmlError:
            return None

    def cuda_version(self) -> str | None:
        """The CUDA version the driver supports, as nvidia-smi prints it ("12.4")."""
        version = ctypes.c_int(0)
        if self.ask("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(version)) != SUCCESS:
            return None
        return f"{version.value // 1000}.{version.value % 1000 // 10}"

    def process_name(self, pid: int) -> str:
        buf = ctypes.create_string_buffer(256)
        if self.ask("nvmlSystemGetProcessName", ctypes.c_uint(pid), buf, ctypes.c_uint(256)) != SUCCESS:
            return ""
        return buf.value.decode(errors="replace")

    # --- Mokka's private calls (native/nvml/api/private.c) ---------------------------------

    def node_path(self, which: int) -> str:
        """names.NODE_PATH_PROFILE, _OVERRIDES or _XID_EVENTS of the node in use (absolute)."""
        return self.string("nvmlMokkaGetNodePath", ctypes.c_uint(which), size=names.PATH_MAX)

    def identity(self, index: int) -> tuple[int, str]:
        """(physical index, UUID) of visible GPU ``index``, lost or not."""
        phys = ctypes.c_uint(0)
        buf = ctypes.create_string_buffer(UUID_SIZE)
        self.call("nvmlMokkaGetDeviceIdentity", ctypes.c_uint(index), ctypes.byref(phys), buf,
                  ctypes.c_uint(UUID_SIZE))
        return phys.value, buf.value.decode(errors="replace")

    # --- the export table NVIDIA's nvidia-smi uses (native/nvml/api/export_table.c) ---------

    def export_slot(self, slot: int, *argtypes):
        """Function ``slot`` of the table nvidia-smi asks for, with these argument types;
        None from a library that is not the mock (another driver's table has other slots)."""
        if not self.is_mock:
            return None
        key = ("export", slot)
        f = self._fns.get(key)
        if f is None:
            table = ctypes.c_void_p()
            table_id = (ctypes.c_ubyte * 16)(*names.NVML_EXPORT_TABLE_ID)
            self.call("nvmlInternalGetExportTable", ctypes.byref(table), ctypes.byref(table_id))
            slots = ctypes.cast(table.value + ctypes.sizeof(ctypes.c_size_t),
                                ctypes.POINTER(ctypes.c_void_p))
            f = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(slots[slot])
            self._fns[key] = f
        return f


def open_library(argv0: str | None) -> Library:
    """Load and initialise the mock library; LibraryError or NvmlError with one line."""
    lib = Library(library_path(argv0))
    lib.init()
    return lib
