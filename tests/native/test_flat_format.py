"""The companion format, both ends: what mokka/engine/flatstate.py writes the C reader
takes whole, and every corruption of it is refused whole. All C runs on the ASan +
UBSan build (tests/native/flatprobe.py)."""

from __future__ import annotations

import os

import pytest

from mokka.core import names, xid, yamlio
from mokka.engine import flatstate
from mokka.core import profile as prof
from tests.corpus import engine_cases as corpus
from tests.native.flatprobe import batch, flatprobe, load  # noqa: F401 (fixture)
from tests.native.hostile import restated

CUT = "truncated or edited: its length is not the one its header states"
EDITED = "truncated or edited: its checksum is not the one its header states"


def _pair(tmp_path, name: str, yaml: bytes, companion: bytes) -> tuple[str, str]:
    y, c = tmp_path / f"{name}.yaml", tmp_path / f"{name}.nvml"
    y.write_bytes(yaml)
    c.write_bytes(companion)
    return str(y), str(c)


def _documents(tmp_path) -> dict:
    """One real document of each kind a workload can write: (yaml path, companion path, kind)."""
    state_env = corpus.stage(corpus.Case("fmt", "h100", ()), str(tmp_path / "node"))
    config = state_env[names.ENV_NVML_CONFIG]
    over = b"name: Overridden\nthermal: {temperature_gpu_c: 77}\nlst: ['a\\b', \"c\\nd\"]\n"
    events, _, last = xid.next_events([], [xid.Injection(2, "GPU-2", "0000:4A:00.0", 48)])
    text, companion = xid.render(events, last)
    return {
        "state": (config, flatstate.companion_path(config)),
        "overrides": _pair(tmp_path, "gpu0", over, flatstate.overrides_companion(yamlio.safe_load(over), over)),
        "events": _pair(tmp_path, "xid-events", text, companion),
    }


def _unescaped(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        pair = value[i:i + 2]
        if pair in ("\\\\", "\\n", "\\r"):
            out.append({"\\\\": "\\", "\\n": "\n", "\\r": "\r"}[pair])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize("kind", ["state", "overrides", "events"])
def test_what_python_writes_the_c_reader_takes_whole(flatprobe, tmp_path, kind):
    yaml, companion = _documents(tmp_path)[kind]
    seen = load(flatprobe, kind, yaml, companion)
    assert seen.status == "ok", seen
    body = open(companion, "rb").read().split(b"\n", 3)[3].decode()
    want = [(key, _unescaped(value)) for key, value in (line.split(" ", 1) for line in body.splitlines())]
    assert seen.pairs == want and len(want) > 4
    if kind == "overrides":
        assert dict(seen.pairs)["lst.0"] == "a\\b" and dict(seen.pairs)["lst.1"] == "c\nd"


def _cuts(data: bytes) -> list[bytes]:
    """The companion cut at every line boundary (the header's included)."""
    return [data[:i + 1] for i, byte in enumerate(data[:-1]) if byte == ord("\n")]


def _loads(flatprobe, tmp_path, kind: str, yaml: str, spoilt: list[bytes]) -> list[tuple]:
    """Each of ``spoilt`` loaded as a companion of ``yaml``: one row each (status, file, reason)."""
    files = []
    for n, data in enumerate(spoilt):
        path = tmp_path / f"spoilt{n}.nvml"
        path.write_bytes(data)
        files.append((yaml, str(path)))
    return batch(flatprobe, kind, files)


@pytest.mark.parametrize("kind", ["state", "overrides", "events"])
def test_a_companion_cut_at_any_line_boundary_is_refused(flatprobe, tmp_path, kind):
    yaml, companion = _documents(tmp_path)[kind]
    data = open(companion, "rb").read()
    rows = _loads(flatprobe, tmp_path, kind, yaml, _cuts(data))
    assert len(rows) == data.count(b"\n") - 1
    assert {r[0] for r in rows} == {"invalid"}
    assert {r[2] for r in rows[3:]} == {CUT}


def _flips(data: bytes, step: int) -> list[tuple[int, bytes]]:
    return [(at, data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]) for at in range(0, len(data), step)]


@pytest.mark.parametrize("kind", ["overrides", "events"])
def test_any_byte_flipped_is_refused(flatprobe, tmp_path, kind):
    """Every byte of the small kinds, one at a time (a flip in the header is refused too)."""
    yaml, companion = _documents(tmp_path)[kind]
    data = open(companion, "rb").read()
    flips = _flips(data, 1)
    rows = _loads(flatprobe, tmp_path, kind, yaml, [flipped for _, flipped in flips])
    assert [r for r in rows if r[0] == "ok"] == []
    body_start = len(b"\n".join(data.split(b"\n", 3)[:3])) + 1
    for (at, _), row in zip(flips, rows):
        if at >= body_start:
            assert row[:3] == ("invalid", "companion", EDITED)


def test_the_state_with_a_byte_flipped_every_97_bytes_is_refused(flatprobe, tmp_path):
    yaml, companion = _documents(tmp_path)["state"]
    data = open(companion, "rb").read()
    rows = _loads(flatprobe, tmp_path, "state", yaml, [flipped for _, flipped in _flips(data, 97)])
    assert len(rows) > 1000 and [r for r in rows if r[0] == "ok"] == []


def _with(line: bytes):
    """A change that adds ``line`` to a body and keeps it sorted by key."""
    def change(body: bytes) -> bytes:
        lines = body.split(b"\n")[:-1] + [line]
        return b"\n".join(sorted(lines, key=lambda x: x.split(b" ", 1)[0])) + b"\n"
    return change


SPOILS = {
    # name: (kind, how the body is changed, the reason)
    "a NUL in a value": ("overrides", lambda b: b.replace(b"Overridden", b"Over\0ridden"), "holds a NUL byte"),
    "a line with no space": ("overrides", lambda b: b + b"zzz\n", "malformed at line 9"),
    "an empty line": ("overrides", lambda b: b + b"\n", "malformed at line 9"),
    "no newline at the end": ("overrides", lambda b: b + b"zzz 1", "malformed at line 9"),
    "keys out of order": ("overrides", lambda b: b"zzz 1\n" + b, "keys out of order at line 5"),
    "a key twice": ("overrides", _with(b"name Twice"), "keys out of order at line 8"),
    "nvlink links past NVML's 18": ("overrides", _with(b"nvlink_links.len 19"),
                                    "a list nvlink_links longer than 18 items"),
    "processes past the bound": ("overrides", _with(b"processes.len 1048576"),
                                 "a list processes longer than 1024 items"),
    "a list length that is no number": ("overrides", _with(b"processes.len 1e3"),
                                        "the length of a list processes is not a number"),
    "a list length past 2**64": ("overrides", _with(b"processes.len 18446744073709551616"),
                                 "the length of a list processes is not a number"),
    "graphics clocks past the bound": (
        "overrides", _with(b"supported_clocks.memory_clocks.3.graphics_clocks.len 4097"),
        "a list supported_clocks.memory_clocks.N.graphics_clocks longer than 4096 items"),
    "more GPUs than 64": ("state", lambda b: b.replace(b"\ngpu.len 8\n", b"\ngpu.len 65\n"),
                          "a list gpu longer than 64 items"),
    "a GPU's links past 18": ("state", lambda b: b.replace(b"gpu.3.nvlink_links.len 18\n",
                                                           b"gpu.3.nvlink_links.len 1048576\n"),
                              "a list nvlink_links longer than 18 items"),
    "event.len 2**31": ("events", lambda b: b.replace(b"event.len 1", b"event.len 2147483648"),
                        "a list event longer than 1024 items"),
    "last_seq 2**64-1": ("events", lambda b: b.replace(b"last_seq 1", b"last_seq 18446744073709551615"),
                         "last_seq is not a sequence number up to 9007199254740991"),
    "an event past last_seq": ("events", lambda b: b.replace(b"event.0.seq 1", b"event.0.seq 2"),
                               "event 0 lacks a seq from 1 to last_seq, a gpu below 64 or a code"),
    "an event on GPU 64": ("events", lambda b: b.replace(b"event.0.gpu 2", b"event.0.gpu 64"),
                           "event 0 lacks a seq from 1 to last_seq, a gpu below 64 or a code"),
    "an event without a code": ("events", lambda b: b.replace(b"event.0.code 48\n", b""),
                                "event 0 lacks a seq from 1 to last_seq, a gpu below 64 or a code"),
}


@pytest.mark.parametrize("spoil", list(SPOILS))
def test_a_whole_companion_that_breaks_a_rule_of_its_kind_is_refused(flatprobe, tmp_path, spoil):
    kind, change, reason = SPOILS[spoil]
    yaml, companion = _documents(tmp_path)[kind]
    data = open(companion, "rb").read()
    body = data.split(b"\n", 3)[3]
    assert change(body) != body
    open(companion, "wb").write(restated(data, change(body)))
    assert load(flatprobe, kind, yaml, companion)[:3] == ("invalid", "companion", reason)


def test_its_lists_at_their_bounds_are_taken(flatprobe, tmp_path):
    yaml, companion = _documents(tmp_path)["overrides"]
    data = open(companion, "rb").read()
    body = _with(b"processes.len 1024")(_with(b"nvlink_links.len 18")(data.split(b"\n", 3)[3]))
    open(companion, "wb").write(restated(data, body))
    assert load(flatprobe, "overrides", yaml, companion).status == "ok"


def test_a_document_with_no_values_is_an_empty_body_and_taken(flatprobe, tmp_path):
    text = b"{}\n"
    yaml, companion = _pair(tmp_path, "gpu0", text, flatstate.overrides_companion({}, text))
    assert open(companion, "rb").read().endswith(b"\nbody 0 crc32:00000000\n")
    assert load(flatprobe, "overrides", yaml, companion) == ("ok", "", "", [])


@pytest.mark.parametrize("text", [b"a: 1\n", b"1"], ids=["a short document", "one byte"])
def test_every_byte_of_a_short_yaml_is_in_its_digest(flatprobe, tmp_path, text):
    yaml, companion = _pair(tmp_path, "gpu0", text, flatstate.overrides_companion(yamlio.safe_load(text), text))
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("ok", "", "")
    open(yaml, "wb").write(text[:-1] + b"2")                 # the last byte changed: another document
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("stale", "companion",
                                                                "stale: not compiled from this YAML")


@pytest.mark.parametrize("line", [b"supported_clocks.memory_clocks.x.graphics_clocks.len 5000",
                                  b"supported_clocks.memory_clocks..graphics_clocks.len 5000",
                                  b"nvlink_links2.len 99", b"nvlink_link.len 99"],
                         ids=["no item number", "an empty item number", "a longer name", "a shorter name"])
def test_the_length_of_a_list_the_kind_does_not_bound_is_only_a_value(flatprobe, tmp_path, line):
    yaml, companion = _documents(tmp_path)["overrides"]
    data = open(companion, "rb").read()
    open(companion, "wb").write(restated(data, _with(line)(data.split(b"\n", 3)[3])))
    assert load(flatprobe, "overrides", yaml, companion).status == "ok"


@pytest.mark.parametrize("lines, status, reason", [(2048, "ok", ""), (2049, "invalid", "more than 2048 lines")])
def test_an_overrides_companion_of_its_most_lines_is_taken_and_one_more_refused(flatprobe, tmp_path, lines,
                                                                               status, reason):
    yaml, companion = _documents(tmp_path)["overrides"]
    data = open(companion, "rb").read()
    open(companion, "wb").write(restated(data, b"".join(b"x.%04d 1\n" % i for i in range(lines))))
    assert load(flatprobe, "overrides", yaml, companion)[:3] == (status, "companion" if reason else "", reason)


@pytest.mark.parametrize("header, reason", [
    (b"# mokka-nvml overrides 1", "written in another format version, not 2"),
    (b"# mokka-nvml overrides 3", "written in another format version, not 2"),
    (b"# mokka-nvml state 2", "a companion of another kind, not overrides"),
    (b"# mokka-nvml overrides", "written in another format version, not 2"),
    (b"mokka-nvml overrides 2", "not a Mokka companion"),
], ids=["the format before", "a format after", "another kind", "no version", "no comment mark"])
def test_a_header_of_another_kind_or_version_is_refused(flatprobe, tmp_path, header, reason):
    yaml, companion = _documents(tmp_path)["overrides"]
    data = open(companion, "rb").read()
    open(companion, "wb").write(header + b"\n" + data.split(b"\n", 1)[1])
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("invalid", "companion", reason)


@pytest.mark.parametrize("digest, status, reason", [
    (b"digest sha256:" + b"0" * 64, "stale", "stale: not compiled from this YAML"),
    (b"digest none", "stale", "stale: not compiled from this YAML"),
    (b"digest", "invalid", "malformed at line 2"),
], ids=["another YAML's digest", "no YAML", "no digest"])
def test_a_wrong_digest_is_refused(flatprobe, tmp_path, digest, status, reason):
    yaml, companion = _documents(tmp_path)["overrides"]
    lines = open(companion, "rb").read().split(b"\n", 2)
    open(companion, "wb").write(b"\n".join([lines[0], digest, lines[2]]))
    assert load(flatprobe, "overrides", yaml, companion)[:3] == (status, "companion", reason)


@pytest.mark.parametrize("body_line", [b"body 12", b"body x crc32:00000000", b"body 5 crc32:0000000",
                                       b"body 5 crc32:0000000G", b"body 5 crc32:DEADBEEF",
                                       b"body 99999999999999999999 crc32:00000000"])
def test_a_malformed_body_line_is_refused(flatprobe, tmp_path, body_line):
    yaml, companion = _documents(tmp_path)["overrides"]
    lines = open(companion, "rb").read().split(b"\n", 3)
    open(companion, "wb").write(b"\n".join([lines[0], lines[1], body_line, lines[3]]))
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("invalid", "companion", "malformed at line 3")


@pytest.mark.parametrize("last, status", [(9007199254740991, "ok"), (9007199254740992, "invalid")],
                         ids=["2^53 - 1", "2^53"])
def test_the_last_event_number_is_taken_up_to_2_to_the_53_less_1(flatprobe, tmp_path, last, status):
    yaml, companion = _documents(tmp_path)["events"]
    data = open(companion, "rb").read()
    body = b"".join(line + b"\n" for line in data.split(b"\n", 3)[3].split(b"\n")[:-1]
                    if not line.startswith(b"last_seq "))
    open(companion, "wb").write(restated(data, _with(b"last_seq %d" % last)(body)))
    reason = "" if status == "ok" else "last_seq is not a sequence number up to 9007199254740991"
    assert load(flatprobe, "events", yaml, companion)[:3] == (status, "companion" if reason else "", reason)


def _fifo(path):
    os.mkfifo(path)


def _directory(path):
    os.mkdir(path)


def _link_to_a_good_copy(path):
    os.replace(path, path + ".real")
    os.symlink(os.path.basename(path) + ".real", path)


HOSTILE = {"a FIFO": (_fifo, "a FIFO, not a regular file"),
           "a directory": (_directory, "a directory, not a regular file"),
           "a symbolic link to a good copy": (_link_to_a_good_copy, "a symbolic link, not followed")}


@pytest.mark.parametrize("which", ["yaml", "companion"])
@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_file_that_is_no_regular_file_is_refused_without_blocking(flatprobe, tmp_path, which, hostile):
    yaml, companion = _documents(tmp_path)["overrides"]
    target = yaml if which == "yaml" else companion
    make, reason = HOSTILE[hostile]
    if hostile != "a symbolic link to a good copy":
        os.unlink(target)
    make(target)
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("refused", which, reason)


def test_a_device_is_refused_unopened(flatprobe, tmp_path):
    yaml, _ = _documents(tmp_path)["overrides"]
    assert load(flatprobe, "overrides", yaml, "/dev/zero")[:3] == ("refused", "companion",
                                                                  "a device, not a regular file")


@pytest.mark.parametrize("kind, bound", [("overrides", names.MAX_OVERRIDES_COMPANION_BYTES),
                                         ("events", names.MAX_EVENTS_COMPANION_BYTES),
                                         ("state", names.MAX_STATE_COMPANION_BYTES)])
def test_a_companion_past_its_bound_is_refused_unread(flatprobe, tmp_path, kind, bound):
    yaml, companion = _documents(tmp_path)[kind]
    os.truncate(companion, 256 << 20)           # sparse: 256 MiB a reader would have taken before
    assert load(flatprobe, kind, yaml, companion)[:3] == ("refused", "companion", f"larger than {bound} bytes")


def test_a_yaml_past_the_document_bound_is_refused_unread(flatprobe, tmp_path):
    yaml, companion = _documents(tmp_path)["overrides"]
    os.truncate(yaml, names.MAX_DOCUMENT_BYTES + 1)
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("refused", "yaml", "larger than 4194304 bytes")


def test_missing_files_are_told_apart(flatprobe, tmp_path):
    yaml, companion = _documents(tmp_path)["overrides"]
    os.unlink(companion)
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("missing", "companion", "missing")
    os.unlink(yaml)
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("yaml_missing", "yaml", "missing")


def test_a_path_through_a_regular_file_is_missing_not_refused(flatprobe, tmp_path):
    """A workload that puts a file where a directory of the node was has taken the
    document away, as a removal would: nothing there to read, nothing to warn of."""
    yaml, companion = _documents(tmp_path)["overrides"]
    plain = tmp_path / "plain"
    plain.write_bytes(b"x")
    assert load(flatprobe, "overrides", yaml, str(plain / "gpu0.nvml"))[:3] == ("missing", "companion", "missing")
    assert load(flatprobe, "overrides", str(plain / "gpu0.yaml"), companion)[:3] == ("yaml_missing", "yaml",
                                                                                    "missing")


@pytest.mark.parametrize("data", [b"#", b""], ids=["one byte", "empty"])
def test_a_companion_too_short_for_a_header_is_read_whole_and_refused(flatprobe, tmp_path, data):
    yaml, companion = _documents(tmp_path)["overrides"]
    open(companion, "wb").write(data)
    assert load(flatprobe, "overrides", yaml, companion)[:3] == ("invalid", "companion", "not a Mokka companion")


def test_the_profile_bounds_are_the_readers(tmp_path):
    """The schema and the reader agree: a profile past NVML's links or the processes bound
    is refused when it loads, with the field named, before any companion exists."""
    text = (b'version: "1.0"\nsystem: {driver_version: "550.1.1", num_devices: 1}\n'
            b"nvlink: {links_per_gpu: 19}\n")
    with pytest.raises(prof.ProfileError, match="at most 18"):
        prof.parse(text)
