"""How the library looks a reading up: a GPU's own overrides layer over the profile key by
key, "N/A" is a reading the board does not report, a flag is NVML's 1 or 0, and a list is as
long as the profile's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.corpus import engine_cases as corpus
from tests.native.conftest import clean_env, run_probe

NOT_SUPPORTED = ["err", 3]


def _dump(nvml_lib, tmp_path, profile: str, overrides: dict) -> list[dict]:
    env = corpus.stage(corpus.Case("lookup", profile, (), overrides=overrides), str(tmp_path))
    out, err = run_probe(nvml_lib, env, "dump")
    assert err == ""
    return out["gpus"]


def test_a_gpus_own_document_adds_only_the_keys_it_holds(nvml_lib, tmp_path):
    # T4 has no row remapping; renaming its GPU 0 must not give GPU 0 one.
    gpus = _dump(nvml_lib, tmp_path, "t4", {0: "name: Renamed GPU\n"})
    assert [g["Name"] for g in gpus[:2]] == ["Renamed GPU", "NVIDIA T4"]
    assert [g["RemappedRows"] for g in gpus[:2]] == [NOT_SUPPORTED, NOT_SUPPORTED]
    assert [g["Serial"] for g in gpus[:2]] == ["0421819085400", "0421819085401"]


def test_a_gpus_own_document_gives_no_block_the_profile_lacks(nvml_lib, tmp_path):
    # No built-in board reports ECC repairs; a GPU with a document of its own still does not.
    gpus = _dump(nvml_lib, tmp_path, "h100", {1: "name: Renamed GPU\n"})
    assert [g["Name"] for g in gpus[:2]] == ["NVIDIA H100 80GB HBM3", "Renamed GPU"]
    assert [g["RepairStatus"] for g in gpus[:2]] == [NOT_SUPPORTED, NOT_SUPPORTED]
    assert gpus[1]["RemappedRows"] == [0, 0, 0, 0]


def test_na_in_an_override_is_a_reading_the_board_does_not_report(nvml_lib, tmp_path):
    gpus = _dump(nvml_lib, tmp_path, "h100", {1: 'serial: "N/A"\n'})
    assert [g["Serial"] for g in gpus[:3]] == ["1562821083900", NOT_SUPPORTED, "1562821083902"]


def test_a_list_is_as_long_as_the_profile_declares(nvml_lib, tmp_path):
    gpus = _dump(nvml_lib, tmp_path, "h100", {})
    assert gpus[0]["SupportedMemoryClocks"] == [2619]
    assert gpus[0]["RemappedRows"] == [0, 0, 0, 0]


def test_a_flag_reads_as_nvmls_one(nvml_lib, tmp_path):
    gpus = _dump(nvml_lib, tmp_path, "h100", {2: "remapped_rows:\n  pending: true\n"})
    # (correctable, uncorrectable, pending, failure occurred)
    assert [g["RemappedRows"] for g in gpus[1:3]] == [[0, 0, 0, 0], [0, 0, 1, 0]]


def test_na_is_the_words_na_and_n_slash_a_in_any_case_and_spacing_or_nothing(nvml_lib, tmp_path):
    serials = ["n/a  ", " nA ", "   ", "", "N/AB", "NAN", "N", "N/A/"]
    gpus = _dump(nvml_lib, tmp_path, "h100", {i: f'serial: "{s}"\n' for i, s in enumerate(serials)})
    assert [g["Serial"] for g in gpus] == [NOT_SUPPORTED] * 4 + ["N/AB", "NAN", "N", "N/A/"]


def test_a_block_a_gpus_document_sets_to_a_value_hides_the_profiles_block(nvml_lib, tmp_path):
    # "thermal: N/A" owns every key below thermal: none comes from the profile.
    gpus = _dump(nvml_lib, tmp_path, "h100", {1: 'thermal: "N/A"\n'})
    assert [g["Temperature"] for g in gpus[:3]] == [34, NOT_SUPPORTED, 34]
    assert [g["TemperatureThreshold"] for g in gpus[:2]] == [[92, 87, NOT_SUPPORTED, 83], [NOT_SUPPORTED] * 4]


def test_a_list_a_gpus_document_sets_owns_every_item(nvml_lib, tmp_path):
    # The document's one memory clock is the whole list: no item of the profile's shows through.
    gpus = _dump(nvml_lib, tmp_path, "h100", {0: "supported_clocks:\n  memory_clocks:\n"
                                                 "    - freq_mhz: 1593\n      graphics_clocks_mhz: [1980]\n"})
    assert [g["SupportedMemoryClocks"] for g in gpus[:2]] == [[1593], [2619]]


def test_an_item_of_a_list_a_gpus_document_sets_lacks_what_the_item_leaves_out(nvml_lib, tmp_path):
    # The document's memory clock names no graphics clocks: the profile's 2619 MHz ones are not its.
    gpus = _dump(nvml_lib, tmp_path, "h100", {0: "supported_clocks:\n  memory_clocks:\n    - freq_mhz: 2619\n"})
    assert gpus[0]["SupportedMemoryClocks"] == [2619]
    assert gpus[0]["SupportedGraphicsClocks"] == [[]]
    assert len(gpus[1]["SupportedGraphicsClocks"][0]) > 0


SERIALS = r"""
import ctypes, json, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
assert lib.nvmlInit_v2() == 0
out = []
for arg in sys.argv[1:]:                       # GPU:buffer size
    index, size = map(int, arg.split(":"))
    h, buf = ctypes.c_void_p(), ctypes.create_string_buffer(2048)
    assert lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(h)) == 0
    code = lib.nvmlDeviceGetSerial(h, buf, ctypes.c_uint(size))
    out.append([code, len(buf.value)])
print(json.dumps(out))
"""


def _serials(nvml_lib, tmp_path, overrides: dict, *asks: str) -> list:
    env = corpus.stage(corpus.Case("lookup", "h100", (), overrides=overrides), str(tmp_path))
    res = subprocess.run([sys.executable, "-c", SERIALS, *asks], env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_a_string_fills_a_buffer_one_longer_than_itself_and_no_shorter(nvml_lib, tmp_path):
    # (code, length read); NVML_ERROR_INSUFFICIENT_SIZE is 7, and the buffer is left as it was.
    assert _serials(nvml_lib, tmp_path, {0: 'serial: "ABCDEFGH"\n'}, "0:9", "0:8", "0:30") == \
        [[0, 8], [7, 0], [0, 8]]


def test_a_value_longer_than_the_library_holds_is_not_read(nvml_lib, tmp_path):
    # 511 characters and the end of the string fill the library's 512 bytes; 512 are a reading
    # it cannot hold, which it does not report (NVML_ERROR_NOT_SUPPORTED, 3).
    overrides = {0: f'serial: "{"S" * 511}"\n', 1: f'serial: "{"S" * 512}"\n'}
    assert _serials(nvml_lib, tmp_path, overrides, "0:1024", "1:1024") == [[0, 511], [3, 0]]


def test_a_block_a_gpus_document_holds_is_a_block_the_gpu_has(nvml_lib, tmp_path):
    # No built-in board reports ECC repairs; one key of them in GPU 0's document (the whole
    # document) makes GPU 0 report them: (channel repair pending, TPC repair pending).
    gpus = _dump(nvml_lib, tmp_path, "h100", {0: "ecc:\n  repair:\n    tpc_pending: true\n"})
    assert [g["RepairStatus"] for g in gpus[:2]] == [[0, 1], NOT_SUPPORTED]


def test_a_number_is_all_of_its_text(nvml_lib, tmp_path):
    # "12abc" is no number (not reported); "1e2" is the float 100.
    gpus = _dump(nvml_lib, tmp_path, "h100", {0: "thermal: {temperature_gpu_c: '12abc'}\n",
                                              1: "thermal: {temperature_gpu_c: '1e2'}\n"})
    assert [g["Temperature"] for g in gpus[:3]] == [NOT_SUPPORTED, 100, 34]


def test_a_number_the_board_does_not_report_answers_not_supported(nvml_lib, tmp_path):
    # NVML's nvmlDeviceGetCudaComputeCapability: both halves or NOT_SUPPORTED, never one read half.
    gpus = _dump(nvml_lib, tmp_path, "h100", {0: "compute_capability: {major: 'N/A'}\n",
                                              1: "compute_capability: {minor: ''}\n"})
    assert [g["CudaComputeCapability"] for g in gpus[:3]] == [NOT_SUPPORTED, NOT_SUPPORTED, [9, 0]]


WIDE = r"""
import ctypes, json, sys
lib = ctypes.CDLL("libnvidia-ml.so.1")
assert lib.nvmlInit_v2() == 0
out = []
for index in range(6):
    h, count, value = ctypes.c_void_p(), ctypes.c_ulonglong(), ctypes.c_longlong()
    assert lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(h)) == 0
    ecc = lib.nvmlDeviceGetTotalEccErrors(h, 0, 0, ctypes.byref(count))     # corrected, volatile
    cuda = lib.nvmlMokkaGetDeviceCudaValue(h, b"cuda.wide", ctypes.byref(value))
    out.append([ecc, count.value, cuda, value.value])
print(json.dumps(out))
"""


def test_a_64_bit_count_reads_to_its_last_digit(nvml_lib, tmp_path):
    # Past 2**53 a double no longer holds every integer: these read exactly or not at all.
    # NOT_SUPPORTED (3) for a count past 2**64 - 1 and a signed value past 2**63 - 1.
    # A float leaf reads while it fits: 2**64 and 2**63 are the first that do not.
    counts = ["9007199254740993", "18446744073709551615", "18446744073709551616", "7",
              "1.8446744073709550e+19", "1.8446744073709552e+19"]
    signed = ["9007199254740993", "-9007199254740993", "9223372036854775808", "-7",
              "-9.223372036854775808e+18", "9.223372036854775808e+18"]
    overrides = {i: f"ecc:\n  errors:\n    volatile:\n      single_bit:\n        total: {c}\n"
                    f"cuda:\n  wide: {s}\n" for i, (c, s) in enumerate(zip(counts, signed))}
    env = corpus.stage(corpus.Case("lookup", "h100", (), overrides=overrides), str(tmp_path))
    res = subprocess.run([sys.executable, "-c", WIDE], env=clean_env(nvml_lib, env),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[0, 9007199254740993, 0, 9007199254740993],
                                      [0, 18446744073709551615, 0, -9007199254740993],
                                      [3, 0, 3, 0],
                                      [0, 7, 0, -7],
                                      [0, 18446744073709549568, 0, -9223372036854775808],
                                      [3, 0, 3, 0]]


def _overrides_of_size(tmp_path, size: int) -> dict:
    """A node whose GPU 0 document renames it, in a companion of exactly ``size`` bytes
    (a padding key fills it; the YAML the digest names holds only the name)."""
    from mokka.core import names
    from mokka.engine import flatstate
    from mokka.engine import overrides

    text = b"name: Renamed GPU\n"
    exact = None
    for n in range(65300, 65400):             # the header's length follows the body's digits
        try:
            exact = flatstate.overrides_companion({"name": "Renamed GPU", "zz_padding": "p" * n}, text)
        except flatstate.CompanionError:
            break
    assert exact is not None and len(exact) == 65536
    data = exact if size == 65536 else exact.replace(b"pp\n", b"ppp\n")
    env = corpus.stage(corpus.Case("lookup", "h100", ()), str(tmp_path))
    path = overrides.scope_path(corpus.overrides_dir(os.path.dirname(env[names.ENV_NVML_CONFIG])), 0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text)
    with open(flatstate.companion_path(path), "wb") as f:
        f.write(data)
    assert len(data) == size
    return env


def test_an_overrides_companion_of_exactly_its_bound_reads_and_one_byte_more_does_not(nvml_lib, tmp_path):
    out, err = run_probe(nvml_lib, _overrides_of_size(tmp_path / "at", 65536), "dump")
    assert (out["gpus"][0]["Name"], err) == ("Renamed GPU", "")
    out, err = run_probe(nvml_lib, _overrides_of_size(tmp_path / "past", 65537), "dump")
    assert out["gpus"][0]["Name"] == "NVIDIA H100 80GB HBM3" and "larger than 65536 bytes" in err


def test_a_flag_is_one_of_its_four_words_in_any_case(nvml_lib, tmp_path):
    # NVML's feature state: 1 enabled, 0 disabled; any other value, a long one included,
    # is a reading the board does not report.
    words = ["Enabled", "DISABLED", "True", "false", "yes", "1", "e" * 64, "enabled "]
    gpus = _dump(nvml_lib, tmp_path, "h100", {i: f'accounting: {{mode: "{w}"}}\n' for i, w in enumerate(words)})
    assert [g["AccountingMode"] for g in gpus] == [1, 0, 1, 0] + [NOT_SUPPORTED] * 4


def test_a_value_that_starts_with_an_escape_reads_as_written(nvml_lib, tmp_path):
    # The companion escapes a newline as two bytes; as the first of a value it is still one.
    serials = ['"\\nS1"', '"\\rS2"', '"\\\\S3"', '"S4\\n"']
    gpus = _dump(nvml_lib, tmp_path, "h100", {i: f"serial: {s}\n" for i, s in enumerate(serials)})
    assert [g["Serial"] for g in gpus[:4]] == ["\nS1", "\rS2", "\\S3", "S4\n"]
