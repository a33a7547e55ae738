"""nvmlErrorString's texts and nvmlInternalGetExportTable's shape, through
ctypes on OUR library (built for this machine); neither needs nvmlInit.

The texts are NVIDIA's: each one is checked to be a string in NVIDIA's real
550 library, read as bytes (never loaded: as root with no driver, loading it
creates /dev/nvidiactl on the host).
"""

from __future__ import annotations

import ctypes
import os

import pytest

from tests.integration import runtime as rt

# nvmlReturn_t -> NVIDIA's text (550.163.01, its nvmlErrorString's jump table).
ERROR_TEXTS = {
    0: "Success", 1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported",
    4: "Insufficient Permissions", 5: "Already Initialized", 6: "Not Found",
    7: "Insufficient Size", 8: "Insufficient External Power", 9: "Driver Not Loaded",
    10: "Timeout", 11: "Interrupt Request Issue", 12: "NVML Shared Library Not Found",
    13: "Function Not Found", 14: "Corrupted infoROM", 15: "GPU is lost",
    16: "GPU requires reset", 17: "GPU access blocked by the operating system",
    18: "Driver/library version mismatch", 19: "In use by another client",
    20: "Insufficient Memory", 21: "No data", 22: "vGPU ECC not supported",
    23: "Insufficient Resources", 24: "Invalid Frequency", 25: "Argument version mismatch",
    26: "Requested functionality has been deprecated", 27: "System is not in ready state",
    28: "No supported GPUs were found",
    29: "Resource not in correct state to perform requested operation",
}
SMI_TABLE_ID = bytes.fromhex("c4fe3e6c c98f6c4e a327ee69 6e12f7c4".replace(" ", ""))
TABLE_SIZE = 0x7D8
SLOTS = 250
NVML_SUCCESS, NVML_ERROR_UNINITIALIZED, NVML_ERROR_NOT_SUPPORTED = 0, 1, 3


@pytest.fixture(scope="module")
def lib(nvml_lib) -> ctypes.CDLL:
    library = ctypes.CDLL(os.path.join(nvml_lib, "libnvidia-ml.so.1"))
    library.nvmlErrorString.restype = ctypes.c_char_p
    library.nvmlErrorString.argtypes = [ctypes.c_int]
    return library


@pytest.mark.parametrize("code", sorted(ERROR_TEXTS) + [30, 999, -1, 12345])
def test_error_string_is_nvidias_text(lib, code):
    assert lib.nvmlErrorString(code).decode() == ERROR_TEXTS.get(code, "Unknown Error")


def test_every_error_text_is_a_string_of_nvidias_library():
    env_file = rt.runtime_dir() / "paths.env"
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines()
                  if "=" in line) if env_file.is_file() else {}
    path = values.get("REAL_NVML_LIB", "")
    if not os.path.isfile(path):
        reason = f"NVIDIA'S libnvidia-ml NOT FETCHED (no REAL_NVML_LIB in {env_file}): run {rt.FETCH_SCRIPT}"
        if os.environ.get("MOKKA_REQUIRE_RUNTIME") == "1":
            pytest.fail(reason)
        pytest.skip(f"{'!' * 20} {reason} {'!' * 20}")
    with open(path, "rb") as f:           # read, never loaded
        data = f.read()
    missing = [t for t in list(ERROR_TEXTS.values()) + ["Unknown Error"]
               if t.encode() + b"\0" not in data]
    assert missing == []


def _table(lib, table_id: bytes):
    table = ctypes.c_void_p()
    ident = ctypes.create_string_buffer(table_id, 16)
    ret = lib.nvmlInternalGetExportTable(ctypes.byref(table), ident)
    return ret, table.value


def test_export_table_for_nvidia_smis_id(lib):
    ret, address = _table(lib, SMI_TABLE_ID)
    assert ret == NVML_SUCCESS
    size = ctypes.c_size_t.from_address(address).value
    slots = (ctypes.c_void_p * SLOTS).from_address(address + ctypes.sizeof(ctypes.c_size_t))
    assert size == TABLE_SIZE
    assert [i for i, slot in enumerate(slots) if not slot] == []


def test_export_table_refuses_other_ids(lib):
    ret, address = _table(lib, bytes(16))
    assert (ret, address) == (NVML_ERROR_NOT_SUPPORTED, None)


def test_export_table_slots_answer_without_a_gpu(lib):
    _, address = _table(lib, SMI_TABLE_ID)
    slots = (ctypes.c_void_p * SLOTS).from_address(address + ctypes.sizeof(ctypes.c_size_t))
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    log = fn(slots[25])(ctypes.cast(ctypes.c_char_p(b"nvidia-smi %s: %s\n"), ctypes.c_void_p), None, None)
    assert log == NVML_SUCCESS                           # the debug-log hook prints nothing
    assert fn(slots[164])(None, None, None) == NVML_ERROR_NOT_SUPPORTED
    assert fn(slots[249])(None, None, None) == NVML_ERROR_NOT_SUPPORTED


#: Slot 11, nvidia-smi's `-i <PCI bus id>`: the text -> (domain, bus, device, function), None refused.
BUS_IDS = [("00000000:1B:00.0", (0, 0x1B, 0, 0)), ("0000:1b:00.0", (0, 0x1B, 0, 0)), ("1B:00.0", (0, 0x1B, 0, 0)),
           ("0001:ca:1f.7", (1, 0xCA, 0x1F, 7)), ("1B:00", None), ("1B:00.8", None), ("100:00.0", None),
           ("1B:20.0", None), ("1B:00.0 ", None), ("000000000:1B:00.0", None), ("", None), (":1B:00.0", None)]


@pytest.mark.parametrize("text,parsed", BUS_IDS, ids=[t or "empty" for t, _ in BUS_IDS])
def test_slot_11_reads_a_pci_bus_id_in_every_form_nvidia_smi_takes(lib, text, parsed):
    _, address = _table(lib, SMI_TABLE_ID)
    slots = (ctypes.c_void_p * SLOTS).from_address(address + ctypes.sizeof(ctypes.c_size_t))
    fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, *[ctypes.POINTER(ctypes.c_uint)] * 4)(slots[11])
    out = [ctypes.c_uint(0xEE) for _ in range(4)]
    ret = fn(text.encode(), *[ctypes.byref(o) for o in out])
    if parsed is None:
        assert ret == 2 and [o.value for o in out] == [0xEE] * 4      # INVALID_ARGUMENT, nothing written
    else:
        assert (ret, tuple(o.value for o in out)) == (NVML_SUCCESS, parsed)


def test_events_need_init(lib):
    event_set = ctypes.c_void_p()
    assert lib.nvmlEventSetCreate(ctypes.byref(event_set)) == NVML_ERROR_UNINITIALIZED
