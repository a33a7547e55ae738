"""``mokka ctl``: change a running node's GPUs without a redeploy.

    ctl set GPU KEY=VALUE...   write GPU's runtime overrides (see ``ctl set --help``)
    ctl reset [GPU]            drop GPU's overrides, or every override; leave the drain state, and
                               return what NVML's setters set (power limit, clocks, modes) to the board's;
                               keep what a GPU reset keeps (aggregate ECC counts, remapped rows) unless
                               --lasting
    ctl xid TARGET CODE        raise Xid CODE on a GPU or MIG device (GPU, GPU:GI[:CI] or a MIG
                               UUID): to nvmlEventSetWait callers and the node's kernel log
    ctl ecc GPU sbe|dbe        inject ECC errors (--count N, --location dram|l1|l2|register|texture|sram,
                               --containment contained|uncontained): the counters, field values,
                               remapped rows or retired pages, the ECC event and, for a double-bit
                               error, the board's Xids (94 or 95 with error containment, else 48;
                               then 63, or 64 when no spare row or page is left)
    ctl nvlink GPU LINK KIND   inject NVLink errors (replay, recovery, crc-flit, crc-data, ecc-data;
                               --count N): nvmlDeviceGetNvLinkErrorCounter and the field values
    ctl status                 the visible GPUs and what is set on them, as JSON

GPU is an index as this process sees it (inside a container that sees a subset,
its own numbering, translated as ``nvidia-smi -r`` does; ASCII digits) or a UUID.
A value is held to its key's range and to its GPU's board as the node's compiled
state has it (mokka.smi.ctl.KEYS: memory used within the memory, temperature up to
the shutdown temperature, power and clocks up to their maxima). ctl asks the
mock NVML library which GPUs these are and where the node's files are, and
writes the overrides through mokka.engine.overrides (YAML and compiled companion
together), so every NVML consumer sees them within a second. No click: this runs
from the overlay on a container's own python3. This module is the command line
only: the verbs are mokka.smi.ctl_verbs.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

from mokka.core import names
from mokka.smi.ctl_events import ENV_KMSG_PATH, PROG
from mokka.smi.ctl_node import Fail

ENV_NODE_NAME = "NODE_NAME"
DESCRIPTION = "Change a running node's GPUs without a redeploy."
GPU_HELP = ("the GPU: an index as this process sees it (inside a container that sees a subset, "
            "its own numbering) or a UUID")


def _parser(prog: str = f"mokka {PROG}") -> argparse.ArgumentParser:
    from mokka.cmd.common import argument_parser, example
    from mokka.smi import ctl
    ap = argument_parser(prog, DESCRIPTION, example_line=f"{prog} set 0 temperature=85 power=300W")
    sub = ap.add_subparsers(dest="verb", required=True, metavar="VERB")
    s = sub.add_parser("set", help="set readings of one GPU", description="Set readings of one GPU.",
                       epilog=f"keys: {ctl.allowed_keys()}. Each is also held to the GPU's board, as "
                              f"the node's compiled profile has it: {ctl.board_rules()}.")
    s.add_argument("gpu", metavar="GPU", help=GPU_HELP)
    s.add_argument("assignments", nargs="+", metavar="KEY=VALUE",
                   help="a reading and its value, e.g. temperature=85 or power=300W (keys below)")
    r = sub.add_parser("reset", help="drop one GPU's overrides, or all of them",
                       description="Drop one GPU's overrides, or all of them, and return what NVML's "
                                   "setters set (power limit, clocks, modes) to the board's.")
    r.add_argument("gpu", nargs="?", metavar="GPU", help=GPU_HELP + "; none: every GPU")
    r.add_argument("--lasting", action="store_true",
                   help="also drop what a GPU reset keeps: the aggregate ECC counts and the remapped "
                        "rows or retired pages ctl ecc raised (a board fresh from the factory)")
    sub.add_parser("status", help="the visible GPUs and their overrides, as JSON",
                   description="The visible GPUs and their overrides, as JSON.")
    x = sub.add_parser("xid", help="raise an Xid on one GPU, as the agent's kernellog does",
                       description="Raise an Xid on one GPU: to nvmlEventSetWait callers, and "
                                   "to the node's kernel log.")
    x.add_argument("gpu", metavar="TARGET",
                   help=GPU_HELP + "; or a MIG device: GPU:GI[:CI] (its GPU instance id, and compute "
                        "instance id) or its MIG UUID, as nvidia-smi -L lists them. The event names "
                        "the instance in nvmlEventData_t.gpuInstanceId and computeInstanceId")
    x.add_argument("code", metavar="CODE", help="the Xid code, e.g. 79 (fallen off the bus) or 48 (double bit ECC)")
    _kmsg_options(x)
    e = sub.add_parser("ecc", help="inject ECC errors on one GPU, as its memory would report them",
                       description="Inject single- (sbe) or double-bit (dbe) ECC errors on one GPU, "
                                   "ECC on: raise its volatile and aggregate counts (total and the "
                                   "location's) and the ECC field values, deliver the ECC event to "
                                   "nvmlEventSetWait callers. A double-bit error also raises the Xid "
                                   "the board would: 94 (contained) or 95 (uncontained) on a board "
                                   "with error containment (GA100, GH100 and later), 48 on one "
                                   "without; in device memory it remaps a row (Ampere on: Xid 63, or "
                                   "Xid 64 and the failure flag once the frame buffer's 512 spare "
                                   "rows are used) or retires a page (before Ampere: Xid 63, or Xid "
                                   "64 once 64 pages are retired). A GPU "
                                   "reset clears the volatile counts and the pending flags, and "
                                   "keeps the rest.",
                       epilog=example(f"{prog} ecc 0 sbe --count 3 --location dram"))
    e.add_argument("gpu", metavar="GPU", help=GPU_HELP)
    e.add_argument("kind", metavar="KIND", choices=("sbe", "dbe"),
                   help="sbe (single bit, corrected) or dbe (double bit, uncorrected)")
    e.add_argument("--count", default="1", help="how many errors (1 to 1000000; default 1)")
    e.add_argument("--location", default="dram",
                   choices=("dram", "l1", "l2", "register", "texture", "sram"),
                   help="where the errors are counted (default dram: device memory)")
    e.add_argument("--containment", choices=("contained", "uncontained"), default=None,
                   help="for dbe on a board with error containment: contained (Xid 94, the "
                        "default: the applications that met it end) or uncontained (Xid 95: "
                        "every application on the GPU, which needs a reset)")
    _kmsg_options(e)
    n = sub.add_parser("nvlink", help="inject NVLink errors on one link of one GPU",
                       description="Raise one NVLink error counter of one link of a GPU "
                                   "(nvmlDeviceGetNvLinkErrorCounter and the NVLink error field "
                                   "values). A GPU reset clears it.",
                       epilog=example(f"{prog} nvlink 0 2 crc-flit --count 5"))
    n.add_argument("gpu", metavar="GPU", help=GPU_HELP)
    n.add_argument("link", metavar="LINK", help="the link number, as nvidia-smi nvlink -s lists them")
    n.add_argument("kind", metavar="KIND", choices=("replay", "recovery", "crc-flit", "crc-data", "ecc-data"),
                   help="the counter: replay, recovery, crc-flit, crc-data or ecc-data")
    n.add_argument("--count", default="1", help="how many errors (1 to 1000000; default 1)")
    return ap


def _kmsg_options(x: argparse.ArgumentParser) -> None:
    x.add_argument("--kmsg-path", default=os.environ.get(ENV_KMSG_PATH) or None,
                   help=f"kernel log to append the driver's line to (never created). Default: "
                        f"the one the node agent announces Xids on, as it recorded it in the "
                        f"staged driver root ({names.KMSG_RECORD_NAME}, beside config/); none "
                        f"recorded: no line. Env {ENV_KMSG_PATH}.")
    x.add_argument("--node-name", default=os.environ.get(ENV_NODE_NAME) or socket.gethostname(),
                   help=f"node named on the kernel log line (default: the host name). "
                        f"Env {ENV_NODE_NAME}.")


def run(args: list[str], prog: str = f"mokka {PROG}") -> int:
    from mokka.engine import nvml
    from mokka.smi import ctl_node, ctl_verbs

    opts = _parser(prog).parse_args(args)
    try:
        lib = nvml.open_library(sys.argv[0] if sys.argv else None)
    except nvml.LibraryError as exc:
        raise Fail(str(exc))
    except nvml.NvmlError:
        return 1                         # the library said why, in one line of its own
    return ctl_verbs.VERBS[opts.verb](lib, ctl_node.targets(lib), lib.node_path(names.NODE_PATH_OVERRIDES), opts)


def main(args: list[str], prog_name: str = PROG) -> int:
    from mokka.core.fsutil import LockHeld
    from mokka.engine.overrides import OverridesError

    from mokka.cmd.common import program

    try:
        return run(args, program(prog_name))
    except (Fail, LockHeld, OverridesError) as exc:
        print(f"{prog_name}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"{prog_name}: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1
