"""Bad reports: one line naming the file and what is wrong, exit 1, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.capture.reports import capture_files
from tests.conftest import REPO

HEAD = '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">\n'
CAPTURES = capture_files()
WHOLE = open(CAPTURES[0]).read() if CAPTURES else HEAD + "<nvidia_smi_log><gpu id='0'/></nvidia_smi_log>\n"

CASES = [
    ("the text report, not XML", "==============NVSMI LOG==============\n\nDriver Version : 550.163.01\n",
     "is not XML: give the output of nvidia-smi -q -x (-x makes it XML)"),
    ("truncated", WHOLE[: len(WHOLE) // 2],
     "is not whole XML (line"),
    ("another tool's XML", '<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>\n',
     "is <rss> XML, not nvidia-smi's <nvidia_smi_log>: give the output of nvidia-smi -q -x"),
    ("a capture with no GPU", HEAD + "<nvidia_smi_log>\n\t<driver_version>550.163.01</driver_version>\n"
     "\t<attached_gpus>0</attached_gpus>\n</nvidia_smi_log>\n",
     "lists no GPU (no <gpu> element): capture it on a node whose nvidia-smi sees its GPUs"),
    ("empty", "", "is empty; give the output of nvidia-smi -q -x"),
    ("entities declared", '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaa">]>\n'
     "<nvidia_smi_log>&a;</nvidia_smi_log>\n", "declares XML entities; nvidia-smi -q -x declares none"),
    ("nested past nvidia-smi's depth", "<nvidia_smi_log><gpu id='0'>" + "<a>" * 10000 + "</a>" * 10000
     + "</gpu></nvidia_smi_log>", "nests elements deeper than 8 levels below <gpu>; nvidia-smi's report nests 4"),
    ("more GPUs than a profile holds", "<nvidia_smi_log>" + "<gpu id='0'/>" * 65 + "</nvidia_smi_log>",
     "lists 65 GPUs; a profile holds at most 64"),
    ("a value no profile may hold", WHOLE.replace("<product_name>NVIDIA A100-SXM4-40GB", "<product_name>A100/40GB", 1),
     "gpu 0: <product_name> holds 'A100/40GB': 'A100/40GB' may not contain '/'"),
    ("a leaf nvidia-smi never prints so", WHOLE.replace("<minor_number>0</minor_number>",
                                                        "<minor_number>zero</minor_number>", 1),
     "gpu 0: <minor_number> holds 'zero', which nvidia-smi does not print there"),
]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "mokka", "profile", "capture", *args], capture_output=True,
                          text=True, env=env, input=stdin, timeout=60)


@pytest.mark.parametrize("text, problem", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_report_is_one_line_and_nothing_written(text, problem, tmp_path):
    report, out = tmp_path / "report.xml", tmp_path / "profile.yaml"
    report.write_text(text)
    result = run(str(report), "--out", str(out))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"capture: {report}: {problem}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert not out.exists()
    assert os.listdir(tmp_path) == ["report.xml"]            # no temp file left either


@pytest.mark.parametrize("text, problem", [c[1:] for c in CASES[:2]], ids=[c[0] for c in CASES[:2]])
def test_stdin_is_named_dash(text, problem):
    result = run("-", stdin=text)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"capture: -: {problem}")


@pytest.mark.parametrize("make, problem", [
    (lambda p: p, "cannot read the report: No such file or directory"),
    (lambda p: (os.mkdir(p), p)[1], "cannot read the report: it is a directory"),
    (lambda p: (os.mkfifo(p), p)[1], "cannot read the report: it is a FIFO"),
], ids=["missing", "a directory", "a FIFO (never blocks)"])
def test_a_path_that_is_no_report_is_one_line(make, problem, tmp_path):
    path = make(str(tmp_path / "report.xml"))
    result = run(path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"capture: {path}: {problem}"), result.stderr


def test_a_report_over_16_mib_is_one_line_from_a_file_or_stdin(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text("<nvidia_smi_log>" + " " * (16 * 1024 * 1024) + "</nvidia_smi_log>\n")
    from_file = run(str(report))
    assert (from_file.returncode, from_file.stdout) == (1, "")
    assert from_file.stderr == (f"capture: {report}: cannot read the report: it is 16777250 bytes, over the "
                                "limit of 16777216 bytes; pass the file nvidia-smi -q -x wrote\n")
    from_stdin = run("-", stdin=report.read_text())
    assert (from_stdin.returncode, from_stdin.stdout) == (1, "")
    assert from_stdin.stderr == "capture: -: is over 16 MiB, more than any nvidia-smi -q -x report\n"


def test_neither_or_both_sources_is_a_usage_line(tmp_path):
    for args in ((), ("report.xml", "--from-nvml")):
        result = run(*args)
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == ("capture: give either FILE (the output of nvidia-smi -q -x, - for stdin) "
                                 "or --from-nvml\n")


@pytest.mark.skipif(not CAPTURES, reason="no shared/reference/captures beside the checkout")
def test_a_good_report_from_stdin_prints_the_profile_and_writes_atomically(tmp_path):
    printed = run("-", stdin=WHOLE)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("# Captured by mokka profile capture from -: 1 x NVIDIA A100-SXM4-40GB,")
    out = tmp_path / "profile.yaml"
    written = run(CAPTURES[0], "--out", str(out))
    assert (written.returncode, written.stdout, written.stderr) == (0, "", "")
    assert out.read_text().splitlines()[3:] == printed.stdout.splitlines()[3:]   # the source line aside
    assert os.listdir(tmp_path) == ["profile.yaml"]
