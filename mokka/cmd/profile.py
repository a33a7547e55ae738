"""``mokka profile``: work with profiles. ``capture`` turns a real node's
``nvidia-smi -q -x`` (or its live NVML library) into a profile that reproduces it."""

from __future__ import annotations

import sys

import click

from mokka.cmd.common import CommandError, common_options, example, program, run_click

#: What --from-nvml loads without a path: the library the dynamic loader finds, a real
#: node's own.
DEFAULT_NVML = "libnvidia-ml.so.1"


@click.group(help="Work with GPU profiles.",
             epilog=example("mokka profile capture report.xml --out node.yaml"))
def group() -> None:
    pass


@group.command(help="Print the profile of a real node from its `nvidia-smi -q -x` (FILE, or - for "
                    "stdin), or with --from-nvml from its NVML library.",
               epilog=example("nvidia-smi -q -x | mokka profile capture - --out node.yaml"))
@click.argument("report", metavar="FILE", required=False)
@click.option("--out", "out", envvar="MOKKA_CAPTURE_OUT", default=None, metavar="FILE",
              help="Write the profile to FILE (atomically) instead of printing it. Env MOKKA_CAPTURE_OUT.")
@click.option("--dynamic", envvar="MOKKA_CAPTURE_DYNAMIC", is_flag=True,
              help="Give the readings that move on real hardware the closest built-in board's moving "
                   "pattern instead of the captured values. Env MOKKA_CAPTURE_DYNAMIC.")
@click.option("--from-nvml", "from_nvml", envvar="MOKKA_CAPTURE_FROM_NVML", is_flag=False,
              flag_value=DEFAULT_NVML, default=None, metavar="[LIB]",
              help=f"Read a live NVML library (default {DEFAULT_NVML}, the node's own) instead of a "
                   "file. Env MOKKA_CAPTURE_FROM_NVML.")
@common_options
def capture(report: str | None, out: str | None, dynamic: bool, from_nvml: str | None, gates) -> None:
    from mokka.core.capture import CaptureError
    from mokka.core.capture import capture as make

    if (report is None) == (from_nvml is None):
        raise CommandError("give either FILE (the output of nvidia-smi -q -x, - for stdin) or --from-nvml")
    if from_nvml is not None:
        source, text = from_nvml, _from_nvml(from_nvml)
    else:
        source, text = report, _read(report)
    try:
        profile = make(text, source, dynamic=dynamic)
    except CaptureError as exc:
        raise CommandError(f"{source}: {exc}")
    if out is None:
        click.echo(profile, nl=False)
        return
    from mokka.core.fsutil import atomic_write
    try:
        atomic_write(out, profile)
    except OSError as exc:
        raise CommandError(f"{out}: cannot write the profile: {exc.strerror or exc}")


def _read(path: str) -> bytes:
    from mokka.core.capture.xmlreport import MAX_REPORT_BYTES
    from mokka.core.fsutil import ReadRefused, read_bounded

    if path == "-":
        data = sys.stdin.buffer.read(MAX_REPORT_BYTES + 1)
        return data
    try:
        return read_bounded(path, MAX_REPORT_BYTES)
    except OSError as exc:
        raise CommandError(f"{path}: cannot read the report: {exc.strerror or exc}")
    except ReadRefused as exc:
        raise CommandError(f"{path}: cannot read the report: it {exc}; pass the file nvidia-smi -q -x wrote")


def _from_nvml(library: str) -> str:
    from mokka.smi import snapshot
    from mokka.engine import nvml

    try:
        return snapshot.report_xml(library)
    except (nvml.LibraryError, nvml.NvmlError) as exc:
        raise CommandError(f"{library}: {exc}")


def main(args: list[str], prog_name: str = "profile") -> int:
    return run_click(group, args, program(prog_name))
