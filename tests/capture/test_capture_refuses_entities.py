"""A report that declares entities is refused in any encoding, before anything expands;
the DTD a real report names is never fetched and the report still reads."""

from __future__ import annotations

import os
import re

import pytest

from tests.capture.command import run, run_measured
from tests.capture.reports import capture_files

CAPTURES = capture_files()
ENTITIES = "declares XML entities; nvidia-smi -q -x declares none"
UTF32 = "is UTF-32 text, which no XML parser here reads: give the file nvidia-smi -q -x wrote (UTF-8)"

#: (id, the internal subset, what the root holds): every kind of entity declaration.
DECLARATIONS = [
    ("a general entity (billion laughs)", '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">', "&b;"),
    ("a parameter entity declaring another", "<!ENTITY % p \"<!ENTITY x 'y'>\"> %p;", "&x;"),
    ("an external entity", '<!ENTITY x SYSTEM "file:///etc/passwd">', "&x;"),
    ("an external parameter entity", '<!ENTITY % x SYSTEM "file:///dev/zero"> %x;', ""),
    ("an unparsed entity", '<!NOTATION n SYSTEM "viewer"><!ENTITY x SYSTEM "data" NDATA n>', ""),
]
#: (id, the XML declaration's encoding (None: no declaration), the bytes of a text).
ENCODINGS = [
    ("UTF-8", "UTF-8", lambda t: t.encode("utf-8")),
    ("UTF-8 with a BOM", None, lambda t: b"\xef\xbb\xbf" + t.encode("utf-8")),
    ("UTF-16LE without a BOM", "UTF-16LE", lambda t: t.encode("utf-16-le")),
    ("UTF-16LE without a BOM or a declaration", None, lambda t: t.encode("utf-16-le")),
    ("UTF-16LE with a BOM", "UTF-16", lambda t: b"\xff\xfe" + t.encode("utf-16-le")),
    ("UTF-16BE without a BOM", "UTF-16BE", lambda t: t.encode("utf-16-be")),
    ("UTF-16BE with a BOM", "UTF-16", lambda t: b"\xfe\xff" + t.encode("utf-16-be")),
    ("ISO-8859-1", "ISO-8859-1", lambda t: t.encode("latin-1")),
]
UTF32_ENCODINGS = [
    ("UTF-32LE without a BOM", "UTF-32LE", lambda t: t.encode("utf-32-le")),
    ("UTF-32LE with a BOM", "UTF-32", lambda t: b"\xff\xfe\x00\x00" + t.encode("utf-32-le")),
    ("UTF-32BE without a BOM", "UTF-32BE", lambda t: t.encode("utf-32-be")),
    ("UTF-32BE with a BOM", "UTF-32", lambda t: b"\x00\x00\xfe\xff" + t.encode("utf-32-be")),
]


def document(encoding: str | None, subset: str, body: str) -> str:
    head = f'<?xml version="1.0" encoding="{encoding}"?>\n' if encoding else ""
    return (f"{head}<!DOCTYPE nvidia_smi_log [{subset}]>\n<nvidia_smi_log><driver_version>{body}"
            "</driver_version><gpu id='0'/></nvidia_smi_log>\n")


def refused(path, problem: str, result) -> None:
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"capture: {path}: {problem}\n")


@pytest.mark.parametrize("encoding, encode", [e[1:] for e in ENCODINGS], ids=[e[0] for e in ENCODINGS])
@pytest.mark.parametrize("subset, body", [d[1:] for d in DECLARATIONS], ids=[d[0] for d in DECLARATIONS])
def test_an_entity_declaration_is_refused_in_every_encoding_expat_reads(encoding, encode, subset, body,
                                                                        tmp_path):
    report = tmp_path / "node.xml"
    report.write_bytes(encode(document(encoding, subset, body)))
    refused(report, ENTITIES, run(str(report)))


@pytest.mark.parametrize("encoding, encode", [e[1:] for e in UTF32_ENCODINGS], ids=[e[0] for e in UTF32_ENCODINGS])
def test_utf32_is_refused_by_name_entities_or_not(encoding, encode, tmp_path):
    report = tmp_path / "node.xml"
    report.write_bytes(encode(document(encoding, *DECLARATIONS[0][1:])))
    refused(report, UTF32, run(str(report)))


def billion_laughs_utf16le(path) -> None:
    """Entities expanding to 3 000 000 elements (12 MB), within expat's own amplification
    limit (the 1 MB comment is direct input), in UTF-16LE with no BOM: no `<!ENTITY` in
    its bytes. Read whole, it costs a tree builder hundreds of MB."""
    subset = '<!ENTITY e0 "' + "<a/>" * 30 + '">' + "".join(
        f'<!ENTITY e{n} "' + f"&e{n - 1};" * 10 + '">' for n in range(1, 6))
    text = ('<?xml version="1.0" encoding="UTF-16LE"?>\n'
            f"<!DOCTYPE nvidia_smi_log [{subset}]>\n<!--{' ' * 500_000}-->\n"
            "<nvidia_smi_log>&e5;</nvidia_smi_log>\n")
    path.write_bytes(text.encode("utf-16-le"))


def test_a_utf16_billion_laughs_is_refused_in_one_line_without_expanding(tmp_path):
    report = tmp_path / "node.xml"
    billion_laughs_utf16le(report)
    result = run_measured(str(report))
    print(f"billion laughs (UTF-16LE, no BOM): {result.seconds:.2f} s, {result.max_rss_kib // 1024} MiB peak RSS")
    refused(report, ENTITIES, result)
    assert result.max_rss_kib < 100 * 1024, f"{result.max_rss_kib} KiB"


def test_an_entity_a_report_does_not_declare_is_refused_by_name(tmp_path):
    report = tmp_path / "node.xml"
    report.write_text('<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">\n'
                      "<nvidia_smi_log><driver_version>&nbsp;</driver_version><gpu id='0'/></nvidia_smi_log>\n")
    refused(report, "refers to an entity it does not declare (&nbsp;); nvidia-smi -q -x refers to none",
            run(str(report)))


@pytest.mark.parametrize("declared", ["utf-7", "rot13", "no-such-encoding"])
def test_an_encoding_no_parser_reads_is_one_line(declared, tmp_path):
    report = tmp_path / "node.xml"
    report.write_text(f'<?xml version="1.0" encoding="{declared}"?>\n<nvidia_smi_log/>\n')
    refused(report, "declares an encoding no XML parser here reads: give the file nvidia-smi -q -x wrote (UTF-8)",
            run(str(report)))


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
def test_the_dtd_a_report_names_is_never_read(tmp_path):
    """A real report names nvsmi_device_v1x.dtd; here it names a FIFO, which would block
    whoever opened it: the capture reads as the original does."""
    text = open(CAPTURES[0]).read()
    named = re.search(r'<!DOCTYPE nvidia_smi_log SYSTEM "(nvsmi_device_v1[23]\.dtd)">', text)
    fifo = tmp_path / named.group(1)
    os.mkfifo(fifo)
    report = tmp_path / "node.xml"
    report.write_text(text.replace(named.group(0), f'<!DOCTYPE nvidia_smi_log SYSTEM "{fifo}">', 1))
    original = run(CAPTURES[0])
    assert original.returncode == 0, original.stderr
    result = run(str(report))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[1:] == original.stdout.splitlines()[1:]     # the source line aside


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
@pytest.mark.parametrize("encode", [lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
                                    lambda t: t.encode("utf-16-be"),
                                    lambda t: b"\xef\xbb\xbf" + t.encode()],
                         ids=["UTF-16LE with a BOM (PowerShell's >)", "UTF-16BE", "UTF-8 with a BOM"])
def test_a_real_report_saved_in_another_encoding_captures_as_the_original(encode, tmp_path):
    text = open(CAPTURES[0]).read()
    report = tmp_path / "node.xml"
    report.write_bytes(encode(text.replace('<?xml version="1.0" ?>', "", 1)))
    original = run(CAPTURES[0])
    assert original.returncode == 0, original.stderr
    result = run(str(report))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[1:] == original.stdout.splitlines()[1:]
