"""``check-fabric``: each GPU's NVLink fabric identity and state, as scripts read it.

Exit 0 when every GPU reports fabric info, 2 when some report NOT SUPPORTED,
1 on any other error. No click: this runs in every GPU container.
"""

from __future__ import annotations

import sys

PROG = "check-fabric"


def usage(prog: str) -> str:
    from mokka.cmd.common import example
    return (f"Usage: {prog}\n\nPrint the NVLink fabric state (clusterUuid, cliqueId, state) of every GPU.\n\n"
            + example(prog))


def report(lib, count: int) -> tuple[str, int]:
    """The text and exit status for the ``count`` GPUs this process sees."""
    from mokka.engine import nvml
    from mokka.smi import values as v
    from mokka.smi.gpu import Gpu

    lines = [f"Discovered {count} GPU(s)"]
    code = 0
    for i in range(count):
        try:
            gpu = Gpu(lib, i, lib.handle(i))
        except nvml.NvmlError as exc:
            lines.append(f"GPU {i}: {exc}")
            code = 1
            continue
        lines.append(f"GPU {i} ({gpu.uuid() or ''})")
        info = gpu.fabric()
        state = 0 if info is None else info.state
        if info is None or state == 0:
            code = code or 2
            lines += ["  clusterUuid: N/A", "  cliqueId: N/A"]
        else:
            lines += [f"  clusterUuid: {v.uuid_text(info.clusterUuid)}", f"  cliqueId: {info.cliqueId}"]
        lines.append(f"  state {v.FABRIC_STATES.get(state, ('', 'UNKNOWN'))[1]} ({state})")
    return "\n".join(lines) + "\n", code


def main(args: list[str], prog_name: str = PROG) -> int:
    from mokka.cmd import common

    try:
        prog = common.program(prog_name)
        if args and args[0] in ("-h", "--help"):
            print(usage(prog))
            return 0
        if args:                                   # it takes none
            return common.usage_error(prog, common.unexpected(args[0], ["--help"]))
        from mokka.engine import nvml
        try:
            lib = nvml.open_library(sys.argv[0] if sys.argv else None)
        except nvml.LibraryError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        except nvml.NvmlError:           # the library said why, in one line of its own
            return 1
        count = lib.count()
        if not count:
            print("Discovered 0 GPU(s)")
            print(f"{PROG}: no GPUs visible", file=sys.stderr)
            return 1
        text, code = report(lib, count)
        sys.stdout.write(text)
        return code
    except BrokenPipeError:
        return 1
    except Exception as exc:                      # never a traceback
        print(f"{PROG}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
