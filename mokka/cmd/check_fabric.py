"""``check-fabric``: each GPU's NVLink fabric identity and state, as scripts read it.

Exit 0 when every GPU reports fabric info, 2 when some report NOT SUPPORTED,
1 on any other error. No click: this runs in every GPU container.
"""

from __future__ import annotations

import os
import sys

PROG = "check-fabric"
USAGE = f"Usage: {PROG}\n\nPrint the NVLink fabric state (clusterUuid, cliqueId, state) of every GPU."


def report(gpus: list) -> tuple[str, int]:
    from mokka.core import names
    from mokka.smi import values as v

    lines = [f"Discovered {len(gpus)} GPU(s)"]
    unsupported = 0
    for gpu in gpus:
        state = v.fabric_state(gpu)
        lines.append(f"GPU {gpu['index']} ({gpu.get('uuid', '')})")
        if state == "not_supported":
            unsupported += 1
            lines += ["  clusterUuid: N/A", "  cliqueId: N/A"]
        else:
            fabric = gpu["fabric"]
            lines += [f"  clusterUuid: {fabric.get('cluster_uuid', '')}",
                      f"  cliqueId: {fabric.get('clique_id', 0)}"]
        lines.append(f"  state {state.upper()} ({names.FABRIC_STATE_CODES.get(state, -1)})")
    code = 2 if unsupported else 0
    return "\n".join(lines) + "\n", code


def main(args: list[str], prog_name: str = PROG) -> int:
    try:
        if args and args[0] in ("-h", "--help"):
            print(USAGE)
            return 0
        if args:
            print(f"{PROG}: unexpected argument {args[0]!r}\n{USAGE}", file=sys.stderr)
            return 1
        from mokka.smi import engine
        try:
            node = engine.load(os.environ, sys.argv[0] if sys.argv else None)
        except engine.EngineError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        if not node.gpus:
            print("Discovered 0 GPU(s)")
            print(f"{PROG}: no GPUs visible", file=sys.stderr)
            return 1
        text, code = report(node.gpus)
        sys.stdout.write(text)
        return code
    except BrokenPipeError:
        return 1
    except Exception as exc:                      # never a traceback
        print(f"{PROG}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
