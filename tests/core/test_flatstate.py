"""The compiled companions the C library reads: exact bytes for small documents."""

from __future__ import annotations

import hashlib
import zlib

import pytest

from mokka.core import compile as comp
from mokka.engine import flatstate
from mokka.core import profile as prof


@pytest.mark.parametrize("yaml_path, expected", [
    ("/x/config.yaml", "/x/config.nvml"),
    ("/x/overrides.yaml", "/x/overrides.nvml"),
    ("/x/topology.yml", "/x/topology.nvml"),
    ("/x.d/config", "/x.d/config.nvml"),          # a dot in a directory is not a suffix
    ("/x/.hidden", "/x/.hidden.nvml"),
    ("/x/c.yaml", "/x/c.nvml"),                    # a one-letter name keeps its letter
])
def test_companion_path(yaml_path, expected):
    assert flatstate.companion_path(yaml_path) == expected


def test_overrides_companion_exact_bytes():
    """One scope's document: its fields as they are (a GPU's state, no wrapper)."""
    text = b"{thermal: {temperature_gpu_c: 77}, name: 'A\\\\B'}\n"
    doc = {"thermal": {"temperature_gpu_c": 77}, "ok": True, "none": None, "ratio": 0.5,
           "lst": ["a\nb", "c"], "name": "A\\B"}
    want = ("# mokka-nvml overrides 2\n"
            f"digest sha256:{hashlib.sha256(text).hexdigest()}\n"
            "body 86 crc32:0d472d30\n"                # the length and zlib.crc32 of the lines below
            "lst.0 a\\nb\n"
            "lst.1 c\n"
            "lst.len 2\n"
            "name A\\\\B\n"
            "ok true\n"
            "ratio 0.5\n"
            "thermal.temperature_gpu_c 77\n")
    assert flatstate.overrides_companion(doc, text).decode() == want


def test_an_overrides_document_that_is_no_mapping_has_no_fields():
    assert flatstate.overrides_companion(["a"], b"- a\n").decode().splitlines()[2:] == ["body 0 crc32:00000000"]


def test_keys_sort_as_c_strcmp_does():
    # '.' (0x2e) sorts before digits and letters; '_' (0x5f) after upper case
    pairs = flatstate.flatten({"a": {"b": 1}, "a_b": 2, "aB": 3, "a.": None, "A": 4})
    assert [k for k, _ in pairs] == ["A", "a.b", "aB", "a_b"]


@pytest.mark.parametrize("name", ["a100", "b200", "gb200", "gb300", "h100", "l40s", "t4"])
def test_state_companion_carries_every_scalar_of_the_state(name):
    profile = prof.load(name)
    state = comp.compile_profile(profile)
    body = flatstate.state_companion(state).decode().splitlines()
    assert body[0] == "# mokka-nvml state 2"
    assert body[1] == "digest " + profile.digest
    data = flatstate.state_companion(state).split(b"\n", 3)[3]
    assert body[2] == f"body {len(data)} crc32:{zlib.crc32(data):08x}"
    table = dict(line.split(" ", 1) for line in body[3:])
    keys = [line.split(" ", 1)[0] for line in body[3:]]
    assert keys == sorted(keys, key=str.encode) and len(keys) == len(set(keys))
    assert int(table["gpu.len"]) == len(state["gpus"])
    last = state["gpus"][-1]
    n = len(state["gpus"]) - 1
    assert table[f"gpu.{n}.uuid"] == last["uuid"]
    assert table[f"gpu.{n}.pci.bus_id"] == last["pci"]["bus_id"]
    assert table[f"gpu.{n}.minor_number"] == str(last["minor_number"])
    assert table["system.driver_version"] == state["system"]["driver_version"]
    if last.get("nvlink_links"):
        assert int(table[f"gpu.{n}.nvlink_links.len"]) == len(last["nvlink_links"])


def test_a_document_past_its_kind_bound_is_refused_before_it_fills_memory():
    """One long name repeated in every GPU's line: refused while walking."""
    state = {"profile": {"digest": "sha256:x"}, "gpus": [{"name": "d" * 1_000_000}] * 100_000}
    with pytest.raises(flatstate.CompanionError, match="more than the 16777216 bytes"):
        flatstate.state_companion(state)


class _Watched(list):
    """A list that counts the items a reader has walked to."""
    walked = 0

    def __iter__(self):
        for item in super().__iter__():
            self.walked += 1
            yield item


@pytest.mark.parametrize("most", [9_058, 10_062])
def test_the_walk_stops_at_the_first_value_past_the_bound(most):
    """Each line counts its key, its value, a space and a newline: ``k.N`` and a
    1,000-byte value take 1,005 bytes, so after the 13 of ``k.len 100000`` nine items
    come to 9,058 bytes and ten to 10,063: the tenth is the first past either bound,
    and the 99,990 after it are never walked."""
    values = _Watched(["v" * 1000] * 100_000)
    with pytest.raises(flatstate.CompanionError):
        flatstate.flatten({"k": values}, most_bytes=most)
    assert values.walked == 10


def test_an_overrides_companion_of_exactly_its_65536_bytes_is_written_and_one_more_refused():
    # The header (kind, digest, body line) and "k <value>\n" come to 133 bytes besides the value.
    assert len(flatstate.overrides_companion({"k": "v" * 65403}, b"doc")) == 65536
    with pytest.raises(flatstate.CompanionError, match="more than the 65536 bytes"):
        flatstate.overrides_companion({"k": "v" * 65404}, b"doc")


def test_an_overrides_document_past_its_line_bound_is_refused():
    doc = {"f": {str(i): i for i in range(2049)}}
    with pytest.raises(flatstate.CompanionError, match="2049 lines, more than the 2048"):
        flatstate.overrides_companion(doc, b"doc")


def test_an_overrides_document_at_its_line_bound_is_written():
    doc = {"f": {str(i): i for i in range(2048)}}
    assert flatstate.overrides_companion(doc, b"doc").count(b"\n") == 2048 + 3


@pytest.mark.parametrize("doc", [{"a\nb": 1}, {"a\tb": 1}, {"a\x7f": 1}, {"a\0b": 1}, {"a": "nul\0here"},
                                 {"": 1}],
                         ids=["newline in a key", "tab in a key", "DEL in a key", "NUL in a key",
                              "NUL in a value", "an empty key"])
def test_keys_are_one_printable_token_and_values_hold_no_nul(doc):
    with pytest.raises(flatstate.CompanionError):
        flatstate.overrides_companion(doc, b"doc")


def test_a_string_value_reads_back_as_it_was_written():
    from mokka.engine import flatstate
    text = flatstate.render(flatstate.KIND_STATE, "sha256:" + "0" * 64,
                            {"profile_source": "/tmp/a\\nb\nc\rd.yaml", "x": 1})
    assert b"profile_source /tmp/a\\\\nb\\nc\\rd.yaml\n" in text
    assert flatstate.value_of(text, "profile_source") == "/tmp/a\\nb\nc\rd.yaml"
    assert flatstate.value_of(text, "profile") is None
