"""How the library looks a reading up: a GPU's own overrides layer over the profile key by
key, "N/A" is a reading the board does not report, a flag is NVML's 1 or 0, and a list is as
long as the profile's."""

from __future__ import annotations

from tests.corpus import engine_cases as corpus
from tests.native.conftest import run_probe

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
