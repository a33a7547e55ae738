"""``mokka ctl``: change a running node's GPUs without a redeploy.

    ctl set GPU KEY=VALUE...   write GPU's runtime overrides (see ``ctl set --help``)
    ctl reset [GPU]            drop GPU's overrides, or every override
    ctl status                 the visible GPUs and what is set on them, as JSON

GPU is an index as this process sees it (inside a container that sees a subset,
its own numbering, translated as ``nvidia-smi -r`` does) or a UUID. Writes go
through mokka.smi.overrides under its lock, YAML and compiled companion
together, so the Python nvidia-smi and the mock NVML library see them within a
second. No click: this runs from the overlay on a container's own python3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

PROG = "ctl"


class Fail(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    from mokka.smi import ctl
    ap = argparse.ArgumentParser(prog=f"mokka {PROG}", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("set", help="set readings of one GPU",
                       epilog="keys: " + ctl.allowed_keys())
    s.add_argument("gpu")
    s.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
    r = sub.add_parser("reset", help="drop one GPU's overrides, or all of them")
    r.add_argument("gpu", nargs="?")
    sub.add_parser("status", help="the visible GPUs and their overrides, as JSON")
    return ap


def _gpu(node, ident: str) -> dict:
    from mokka.smi import engine
    try:
        (gpu,) = engine.pick(node.gpus, ident)
    except (engine.EngineError, ValueError):
        raise Fail(f"{ident}: no such GPU here (give an index from 0 to {len(node.gpus) - 1} or a UUID)")
    return gpu


def run(args: list[str]) -> int:
    from mokka.smi import ctl, engine
    from mokka.smi import overrides as ovr

    opts = _parser().parse_args(args)
    try:
        node = engine.load(os.environ, sys.argv[0] if sys.argv else None)
    except engine.EngineError as exc:
        raise Fail(str(exc))
    path = node.overrides_path
    if opts.verb == "status":
        doc = ovr.read(path) or {}
        devices = doc.get("devices") if isinstance(doc.get("devices"), dict) else {}
        gpus = [{"index": g["index"], "physical_index": g["physical_index"], "uuid": g.get("uuid"),
                 "overrides": devices.get(str(g["physical_index"])) or {}} for g in node.gpus]
        print(json.dumps({"overrides": path, "all": doc.get("all") or {}, "gpus": gpus}, indent=2))
        return 0
    if opts.verb == "set":
        gpu = _gpu(node, opts.gpu)
        try:
            change = ctl.parse_assignments(opts.assignments)
        except ctl.CtlError as exc:
            raise Fail(str(exc))
        ovr.update(path, gpu["physical_index"], change)
        return 0
    if opts.gpu is None:
        ovr.clear(path)
    else:
        ovr.reset(path, [_gpu(node, opts.gpu)["physical_index"]])
    return 0


def main(args: list[str], prog_name: str = PROG) -> int:
    try:
        return run(args)
    except Fail as exc:
        print(f"{prog_name}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{prog_name}: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 1
