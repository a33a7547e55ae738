"""``nvidia-smi``: one mode per run, chosen from the parsed command line.

Renderers are imported only for the mode that runs, so ``-L`` stays cheap. Every
failure ends as the real tool's style of message and a non-zero exit, never a
traceback.
"""

from __future__ import annotations

import sys
import time

from mokka.smi.argv import (BAD_DISPLAY, DISPLAY_WITHOUT_QUERY, EXIT_GPU_LOST, EXIT_INVALID,
                            EXIT_NO_DRIVER, EXIT_NOT_FOUND, EXIT_NOT_SUPPORTED, EXIT_UNKNOWN,
                            HELP, INVALID, INVALID_OPTION, NO_DEVICES, NO_DEVICES_LIST, NO_DRIVER,
                            NO_TOPOLOGY, PROG, UNRECOGNIZED, OneAtATime, Unrecognized, Usage, parse)


def main(args: list[str], prog_name: str = PROG) -> int:
    out = sys.stdout
    try:
        opts = parse(list(args))
        if opts.get("file"):
            out = open(opts["file"], "w")
        return run(opts, out)
    except Usage:
        print(INVALID, file=out)
        return EXIT_INVALID
    except OneAtATime:
        from mokka.smi import setters
        out.write(setters.ONE_AT_A_TIME)
        return EXIT_INVALID
    except Unrecognized as exc:
        out.write(UNRECOGNIZED.format(exc))
        return EXIT_UNKNOWN
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:                      # never a traceback
        print(f"Unknown Error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNKNOWN
    finally:
        if out is not sys.stdout:
            out.close()


def run(opts: dict, out) -> int:
    mode = opts.get("mode")
    if mode == "help":
        print(HELP.format(version="580"), file=out)
        return 0
    if mode == "help-query-gpu":
        from mokka.smi import query
        out.write(query.help_text())
        return 0
    if opts.get("sub") in ("dmon", "pmon"):
        from mokka.smi import monitor_args
        try:
            opts["monitor"] = monitor_args.parse(opts["sub"], opts["rest"])
        except monitor_args.Answer as answer:      # help, or 550's word on a bad option
            out.write(str(answer))
            return 0
    lib = _open_library(out)
    if lib is None:
        return EXIT_NO_DRIVER
    head = {"driver_version": lib.system_string("nvmlSystemGetDriverVersion"),
            "cuda_version": lib.cuda_version(), "attached": lib.count()}
    if mode == "version":
        return _version(head, out)
    if mode == "list":
        if opts.get("id") is not None:
            out.write(INVALID_OPTION.format("-i"))
            return EXIT_INVALID
        return _list(lib, head["attached"], out)
    if not head["attached"]:
        # NVIDIA's binary: topo -m fails outright, everything else finds no device.
        if opts.get("sub") == "topo":
            print(NO_TOPOLOGY, file=out)
            return EXIT_UNKNOWN
        print(NO_DEVICES, file=out)
        return EXIT_NOT_FOUND
    if opts.get("sub") == "topo":
        return _topo(lib, head["attached"], opts["rest"], out)
    if opts.get("sub") == "drain":
        from mokka.smi import drain
        return drain.run(lib, opts["rest"], out)
    return _on_gpus(lib, head, opts, out)


def _open_library(out):
    """The engine's library, or None after NVIDIA's no-driver message."""
    from mokka.engine import nvml
    try:
        return nvml.open_library(sys.argv[0] if sys.argv else None)
    except nvml.LibraryError as exc:
        print(NO_DRIVER, file=out)
        print(f"{PROG}: {exc}", file=sys.stderr)
    except nvml.NvmlError:               # the library said why, in one line of its own
        print(NO_DRIVER, file=out)
    return None


def _version(head: dict, out) -> int:
    drv = head["driver_version"] or "N/A"
    out.write(f"NVIDIA-SMI version  : {drv}\nNVML version        : {'.'.join(drv.split('.')[:2])}\n"
              f"DRIVER version      : {drv}\nCUDA Version        : {head['cuda_version']}\n")
    return 0


def _on_gpus(lib, head: dict, opts: dict, out) -> int:
    """The modes that act on the GPUs ``-i`` (or a subcommand's own ``-i``) selects."""
    from mokka.smi import devices
    ids = opts.get("id")
    mig_args = None
    if opts.get("monitor") and opts["monitor"].ids is not None:
        ids = opts["monitor"].ids
    if opts.get("sub") == "nvlink":
        ids = _nvlink_ids(opts["rest"], ids)
    if opts.get("sub") == "mig":
        from mokka.smi import migcmd
        try:
            mig_args = migcmd.parse(opts["rest"])
        except migcmd.MigUsage as exc:
            print(exc, file=out)
            return EXIT_INVALID
        if mig_args.help or mig_args.action is None:
            out.write(migcmd.HELP)
            return 0
        ids = mig_args.ids if mig_args.ids is not None else ids
    try:
        count = head["attached"]
        gpus = devices.every(lib, count) if ids is None else devices.pick(lib, count, ids)
    except devices.Refused as refused:
        out.write(refused.text)
        return refused.code

    if opts.get("mode") == "reset":
        return _reset(lib, gpus, out)
    if opts.get("modify"):
        from mokka.smi import setters
        return setters.run(lib, gpus, *opts["modify"], out)
    if opts.get("mig") is not None:
        from mokka.smi import migcmd
        return migcmd.set_modes(lib, gpus, opts["mig"], out)
    if mig_args is not None:
        return migcmd.run(lib, gpus, mig_args, out)
    if opts.get("monitor"):
        from mokka.smi import monitor
        return monitor.run(opts["monitor"], gpus, out)
    if opts.get("sub"):
        return _subcommand(opts["sub"], opts["rest"], gpus, out)
    now = time.time()
    if any(opts.get(q) is not None for q in ("query-gpu", "query-compute-apps", "query-accounted-apps")):
        return _query_csv(gpus, head, opts, now, out)
    from mokka.smi import values as v
    stamp = time.strftime(v.TIMESTAMP_FORMAT, time.localtime(now))
    if opts.get("query") or opts.get("xml"):
        return _report(gpus, head, opts, stamp, out)
    if opts.get("display"):
        out.write(DISPLAY_WITHOUT_QUERY)
        return EXIT_INVALID
    from mokka.smi import table
    out.write(table.render(gpus, head["driver_version"], head["cuda_version"], stamp))
    return 0


def _query_csv(gpus: list, head: dict, opts: dict, now: float, out) -> int:
    """--query-gpu / --query-compute-apps / --query-accounted-apps with --format."""
    from mokka.smi import query
    if opts.get("format") is None:
        raise Usage("--format")
    ctx = {"driver_version": head["driver_version"], "count": head["attached"],
           "timestamp_csv": time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now))
           + ".%03d" % int((now % 1) * 1000)}
    try:
        if opts.get("query-gpu") is not None:
            out.write(query.gpu_csv(gpus, opts["query-gpu"], opts["format"], ctx))
        elif opts.get("query-accounted-apps") is not None:
            out.write(query.accounted_csv(gpus, opts["query-accounted-apps"], opts["format"], ctx))
        else:
            out.write(query.apps_csv(gpus, opts["query-compute-apps"], opts["format"], ctx))
    except query.QueryError as exc:
        print(f"{exc}\n", file=out)
        return EXIT_INVALID
    return 0


def _report(gpus: list, head: dict, opts: dict, stamp: str, out) -> int:
    """-q (text) or -x (XML), filtered by -d."""
    from mokka.smi import report
    try:
        tags = report.parse_sections(opts["display"]) if opts.get("display") else ()
    except ValueError:
        print(BAD_DISPLAY, file=out)
        return EXIT_INVALID
    if opts.get("xml"):
        out.write(report.render_xml(gpus, head, stamp, tags))
    else:
        from mokka.smi import textq
        out.write(textq.render(gpus, head, stamp, tags))
    return 0


def _list(lib, count: int, out) -> int:
    """-L: one line per GPU; a refused handle is reported in place, and the run ends 15."""
    from mokka.engine import nvml
    from mokka.smi import devices
    from mokka.smi.table import list_line, mig_list_lines
    if not count:
        print(NO_DEVICES_LIST, file=out)
        return 0
    status = 0
    for i in range(count):
        try:
            gpu = devices.Gpu(lib, i, lib.handle(i))
        except nvml.NvmlError as exc:
            out.write(f"Unable to determine the device handle for gpu {i}: {devices.error_text(exc)}\n\n\n")
            status = EXIT_GPU_LOST if exc.code == EXIT_GPU_LOST else EXIT_UNKNOWN
            continue
        out.write(list_line(gpu) + "\n")
        out.writelines(line + "\n" for line in mig_list_lines(gpu))
    return status


def _reset(lib, gpus: list, out) -> int:
    """-r: the reset NVIDIA's nvidia-smi asks the library for (its export table's slot)."""
    import ctypes
    from mokka.core import names
    slot = lib.export_slot(names.NVML_EXPORT_SLOT_RESET, ctypes.c_uint, ctypes.c_void_p)
    handles = (ctypes.c_void_p * len(gpus))(*(g.handle.value for g in gpus))
    code = slot(len(gpus), handles)
    if code != 0:
        print(f"GPU reset unavailable: {lib.error_string(code)}", file=out)
        return EXIT_NOT_SUPPORTED
    for g in gpus:
        print(f"GPU {g.bus_id()} was successfully reset.", file=out)
    print("All done.", file=out)
    return 0


def _topo(lib, count: int, rest: list, out) -> int:
    from mokka.smi import devices, topo
    if not set(rest) & {"-m", "--matrix"}:
        raise Usage("topo")
    try:
        gpus = devices.every(lib, count)
    except devices.Refused:
        print(NO_TOPOLOGY + "\n", file=out)
        return EXIT_UNKNOWN
    out.write(topo.matrix(lib, gpus))
    return 0


def _nvlink_ids(rest: list, ids: str | None) -> str | None:
    """``nvlink ... -i N``: the subcommand's own -i wins over one before it."""
    for i, word in enumerate(rest[:-1]):
        if word in ("-i", "--id"):
            ids = rest[i + 1]
    return ids


def _subcommand(sub: str, rest: list, gpus: list, out) -> int:
    from mokka.smi import topo
    flags = set(rest)
    if sub == "nvlink":
        if flags & {"-s", "--status"}:
            out.write(topo.status(gpus))
            return 0
        if flags & {"-e", "--errorcounters"}:
            out.write(topo.errors(gpus))
            return 0
        raise Usage(sub)
    if sub in ("vgpu", "conf-compute", "nvswitch"):
        print("Not supported on the device(s)", file=out)
        return EXIT_UNKNOWN
    raise Unrecognized(sub)
