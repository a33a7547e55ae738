"""``mokka ctl``: change a running node's GPUs without a redeploy.

    ctl set GPU KEY=VALUE...   write GPU's runtime overrides (see ``ctl set --help``)
    ctl reset [GPU]            drop GPU's overrides, or every override; leave the drain state, and
                               return what NVML's setters set (power limit, clocks, modes) to the board's;
                               keep what a GPU reset keeps (aggregate ECC counts, remapped rows) unless
                               --lasting
    ctl xid TARGET CODE        raise Xid CODE on a GPU or MIG device (GPU, GPU:GI[:CI] or a MIG
                               UUID): to nvmlEventSetWait callers and the node's kernel log
    ctl ecc GPU sbe|dbe        inject ECC errors (--count N, --location dram|l1|l2|register|texture|sram):
                               the counters, field values, remapped rows or retired pages,
                               the ECC event and, for a double-bit error, Xid 48 (and 63)
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
from the overlay on a container's own python3.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

from mokka.core import names

PROG = "ctl"
ENV_KMSG_PATH = "MOKKA_CTL_KMSG_PATH"
ENV_NODE_NAME = "NODE_NAME"
DESCRIPTION = "Change a running node's GPUs without a redeploy."
GPU_HELP = ("the GPU: an index as this process sees it (inside a container that sees a subset, "
            "its own numbering) or a UUID")


class Fail(Exception):
    pass


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
                                   "nvmlEventSetWait callers; a double-bit error also raises Xid 48 "
                                   "and, in device memory, remaps a row (Ampere on: Xid 63) or "
                                   "retires a page (before Ampere: Xid 63). A GPU reset clears the "
                                   "volatile counts and the pending flags, and keeps the rest.",
                       epilog=example(f"{prog} ecc 0 sbe --count 3 --location dram"))
    e.add_argument("gpu", metavar="GPU", help=GPU_HELP)
    e.add_argument("kind", metavar="KIND", choices=("sbe", "dbe"),
                   help="sbe (single bit, corrected) or dbe (double bit, uncorrected)")
    e.add_argument("--count", default="1", help="how many errors (1 to 1000000; default 1)")
    e.add_argument("--location", default="dram",
                   choices=("dram", "l1", "l2", "register", "texture", "sram"),
                   help="where the errors are counted (default dram: device memory)")
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


class Target:
    """A GPU ctl acts on: its index as this process sees it, its physical index
    (what the overrides are keyed by), its UUID; for ``xid``, the GPU and compute
    instance ids of the MIG device it names (None: not named)."""

    def __init__(self, index: int, physical: int, uuid: str, gi: int | None = None, ci: int | None = None):
        self.index, self.physical, self.uuid = index, physical, uuid
        self.gi, self.ci = gi, ci


def _targets(lib, count: int) -> list:
    out = []
    for i in range(count):
        physical, uuid = lib.identity(i)
        out.append(Target(i, physical, uuid))
    return out


def _target(targets: list, ident: str) -> Target:
    from mokka.smi.ctl import ascii_int, shown

    index = ascii_int(ident)                      # ASCII digits only, as nvidia-smi -i takes them
    for t in targets:
        if index == t.index or ident.lower() == t.uuid.lower():
            return t
    raise Fail(f"{shown(ident)}: no such GPU here (give an index from 0 to {len(targets) - 1} or a UUID)")


def _mig_devices(lib, target: Target) -> list[tuple[str, int, int]]:
    """(UUID, GPU instance id, compute instance id) of each MIG device of ``target``."""
    from mokka.engine import nvml
    from mokka.smi.gpu import Gpu
    try:
        gpu = Gpu(lib, target.index, lib.handle(target.index))
    except nvml.NvmlError:
        return []                                    # a lost GPU lists none
    return [(m.uuid() or "", *m.instance_ids()) for m in gpu.mig_devices()]


def _xid_target(lib, targets: list, ident: str) -> Target:
    """The GPU, or the MIG device, ``ctl xid`` raises its Xid on."""
    from mokka.smi.ctl import CtlError, parse_instance_target, shown

    if ident[:4].upper() == "MIG-":
        for t in targets:
            for uuid, gi, ci in _mig_devices(lib, t):
                if uuid.lower() == ident.lower():
                    return Target(t.index, t.physical, t.uuid, gi, ci)
        raise Fail(f"{shown(ident)}: no such MIG device here (nvidia-smi -L lists them)")
    try:
        gpu, gi, ci = parse_instance_target(ident)
    except CtlError as exc:
        raise Fail(str(exc))
    t = _target(targets, gpu)
    if gi is None:
        return t
    instances = sorted({(g, c) for _, g, c in _mig_devices(lib, t)})
    if (gi, ci) not in instances and not (ci is None and gi in {g for g, _ in instances}):
        have = ", ".join(f"{g}:{c}" for g, c in instances) or "none: MIG is off or no instance exists"
        raise Fail(f"{shown(ident)}: GPU {t.index} has no MIG device there (its GPU:compute "
                   f"instances: {have})")
    return Target(t.index, t.physical, t.uuid, gi, ci)


def _board(lib, target: Target) -> dict:
    """The limits of ``target``'s board (ctl.board_limits) from the node's compiled state:
    the companion of the profile the library loaded, read as every file there is."""
    from mokka.core import fsutil
    from mokka.engine import flatstate
    from mokka.smi import ctl

    path = flatstate.companion_path(lib.node_path(names.NODE_PATH_PROFILE))
    try:
        text = fsutil.read_bounded(path, names.MAX_STATE_COMPANION_BYTES, follow=False)
    except (OSError, fsutil.ReadRefused) as exc:
        raise Fail(f"cannot read the board's limits from {path}: "
                   f"{getattr(exc, 'strerror', None) or exc}; run this again once the node agent "
                   "has staged it")
    return ctl.board_limits(text, target.physical)


def run(args: list[str], prog: str = f"mokka {PROG}") -> int:
    from mokka.smi import ctl
    from mokka.engine import nvml
    from mokka.engine import overrides as ovr

    opts = _parser(prog).parse_args(args)
    try:
        lib = nvml.open_library(sys.argv[0] if sys.argv else None)
    except nvml.LibraryError as exc:
        raise Fail(str(exc))
    except nvml.NvmlError:
        return 1                         # the library said why, in one line of its own
    targets = _targets(lib, lib.count())
    directory = lib.node_path(names.NODE_PATH_OVERRIDES)
    if opts.verb == "status":
        def doc(path):
            try:
                return ovr.read(path) or {}
            except ovr.OverridesError as exc:
                return {"error": str(exc)}
        gpus = [{"index": t.index, "physical_index": t.physical, "uuid": t.uuid,
                 "overrides": doc(ovr.scope_path(directory, t.physical)),
                 "lasting": doc(os.path.join(directory, names.overrides_lasting_file(t.physical)))}
                for t in targets]
        print(json.dumps({"overrides": directory, "all": doc(ovr.scope_path(directory, None)),
                          "gpus": gpus}, indent=2))
        return 0
    if opts.verb == "xid":
        target = _xid_target(lib, targets, opts.gpu)
        try:
            code = ctl.parse_xid_code(opts.code)
        except ctl.CtlError as exc:
            raise Fail(str(exc))
        return raise_xid(lib.node_path(names.NODE_PATH_XID_EVENTS), target, _bus_id(lib, target), code,
                         opts.kmsg_path, opts.node_name)
    if opts.verb in ("ecc", "nvlink"):
        from mokka.cmd import ctl_inject
        target = _target(targets, opts.gpu)
        inject = ctl_inject.ecc if opts.verb == "ecc" else ctl_inject.nvlink
        return inject(lib, target, directory, opts)
    if opts.verb == "set":
        target = _target(targets, opts.gpu)
        try:
            change = ctl.parse_assignments(opts.assignments, _board(lib, target))
        except ctl.CtlError as exc:
            raise Fail(str(exc))
        ovr.update(directory, target.physical, change)
        print(f"{_named(target)}: set {' '.join(opts.assignments)}")
        return 0
    kept = ""
    if opts.lasting and ovr.reset_lasting(directory, [t.physical for t in targets if opts.gpu is None]
                                          or [_target(targets, opts.gpu).physical]):
        kept = "; what a GPU reset keeps dropped too"
    if opts.gpu is None:
        dropped = ovr.clear(directory)
        left = [t for t in targets if _undrain(lib, t)]       # before the settings, which hold it
        _reset_settings(lib, [t.physical for t in targets])
        print(f"every GPU: {dropped} override document{'' if dropped == 1 else 's'} dropped{kept}"
              + "".join(f"; {_named(t)} left the drain state" for t in left))
        return 0
    target = _target(targets, opts.gpu)
    dropped = ovr.reset(directory, [target.physical])
    left = "; drain state left" if _undrain(lib, target) else ""      # before the settings, which hold it
    _reset_settings(lib, [target.physical])
    print(f"{_named(target)}: {'overrides dropped' if dropped else 'no overrides to drop'}{kept}{left}")
    return 0


def _undrain(lib, target: Target) -> bool:
    """A reset takes the GPU out of the drain state too (mokka.smi.drain.undrain)."""
    from mokka.engine import nvml
    from mokka.smi import drain
    try:
        return drain.undrain(lib, target.index)
    except nvml.NvmlError as exc:
        raise Fail(f"{_named(target)}: cannot leave the drain state: {exc}")


def _reset_settings(lib, physical: list) -> None:
    """What NVML's setters set goes back to the board's, as a reset does (the library keeps
    the settings and is their one writer)."""
    import ctypes
    from mokka.engine import nvml
    for index in physical:
        try:
            lib.call("nvmlMokkaResetDeviceSettings", ctypes.c_uint(index))
        except nvml.NvmlError as exc:
            raise Fail(f"GPU {index}: its settings (power limit, clocks, modes) cannot be reset: {exc}; "
                       "run this as the owner of the driver config directory")


def _named(target: Target) -> str:
    return f"GPU {target.index} ({target.uuid})"


def _bus_id(lib, target: Target) -> str:
    from mokka.engine import nvml
    from mokka.smi.gpu import Gpu
    try:
        return Gpu(lib, target.index, lib.handle(target.index)).bus_id()
    except nvml.NvmlError as exc:
        raise Fail(f"GPU {target.index}: {exc}")


def raise_xid(path: str, target: Target, bus_id: str, code: int, kmsg_path: str, node_name: str) -> int:
    """Add the event to xid-events.yaml and its companion (mokka.engine.xidlog, as the
    agent's kernellog does), then write the driver's line to the kernel log, as kernellog
    announces one."""
    from mokka.core import xid
    from mokka.core.fsutil import dir_locked
    from mokka.engine import xidlog

    def refused(exc: xid.Refused) -> None:           # rewritten whole, numbered from 1
        print(f"{PROG}: {path}: not an events document Mokka wrote ({exc}): replacing it", file=sys.stderr)

    injection = xid.Injection(target.physical, target.uuid, bus_id, code, target.gi, target.ci)
    [event], _ = xidlog.record(path, xidlog.inject(injection), lock=dir_locked(path), refused=refused)
    line = xid.kmsg_line(injection, node_name)
    instance = {"gi": target.gi, "ci": target.ci} if target.gi is not None else {}
    print(json.dumps({"seq": event.seq, "gpu": target.index, "uuid": injection.uuid, **instance,
                      "code": code, "kmsg": line}))
    print(f"{PROG}: Xid {code}: {append_kmsg(path, kmsg_path, line)}", file=sys.stderr)
    return 0


def append_kmsg(events_path: str, named: str | None, line: str) -> str:
    """Append the driver's line to the kernel log ``kmsg.target`` allows (``named``: the
    one the user named, or None) for the node whose events file this is; the one line
    saying where it went or why it did not."""
    from mokka.core import fsutil, kmsg, xid

    try:
        record = kmsg.parse_record(fsutil.read_bounded(kmsg.record_path(events_path), kmsg.RECORD_LIMIT,
                                                       follow=False))
    except (OSError, fsutil.ReadRefused):
        record = None
    target = kmsg.target(named, record, events_path)
    if target.path is None:
        return f"reached the mock NVML only: {target.why}"
    try:
        # never created; O_NONBLOCK: a FIFO with no reader there fails at once, never hangs
        fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        return (f"reached the mock NVML only: cannot open the kernel log {target.path} "
                f"({target.why}): {exc.strerror}; name another with --kmsg-path or {ENV_KMSG_PATH}")
    try:
        os.write(fd, (xid.KMSG_PRIORITY + line + "\n").encode())     # one record per write
    finally:
        os.close(fd)
    return f"kernel log line written to {target.path} ({target.why})"


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
