"""``nvidia-smi``: argv parsed by hand (no click, no argparse) to keep ``-L`` cheap.

Renderers are imported only for the mode that runs. Every failure ends as the
real tool's style of message and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import os
import sys
import time

PROG = "nvidia-smi"
INVALID = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")
NO_DEVICES = "No devices were found"
NO_DEVICES_LIST = "No devices found."      # what NVIDIA's -L prints, with exit status 0
NO_TOPOLOGY = "Failed to run topology matrix"
INVALID_OPTION = "ERROR: Option {} is not valid for this command. Please run 'nvidia-smi -h' for help.\n\n"
UNRECOGNIZED = "ERROR: Option {} is not recognized. Please run 'nvidia-smi -h'.\n\n"
BAD_DISPLAY = "Failed to parse --display/-d flags"
DISPLAY_WITHOUT_QUERY = ("Invalid combination of input arguments. Specify -q/--query and -d/--display to run "
                         "a filtered query.  Please run 'nvidia-smi -h' for help.\n\n")
#: Exit statuses the real tool uses (NVML return codes).
EXIT_INVALID, EXIT_NOT_FOUND, EXIT_NO_DRIVER, EXIT_NOT_SUPPORTED, EXIT_UNKNOWN = 2, 6, 9, 3, 255
EXIT_GPU_LOST = 15          # nvidia-smi(1): the GPU has fallen off the bus or is otherwise inaccessible

HELP = """NVIDIA System Management Interface -- v{version} (Mokka mock)

nvidia-smi [OPTION1 [ARG1]] [OPTION2 [ARG2]] ...

    -h,   --help                Print usage information and exit.
    -L,   --list-gpus           Display a list of GPUs connected to the system.
    -q,   --query               Display GPU or Unit info.
    -i,   --id=                 Target a specific GPU (index, UUID or PCI bus id).
    -x,   --xml-format          Produce XML output.
    -d,   --display=            Display only selected information: MEMORY, UTILIZATION, ECC,
                                TEMPERATURE, POWER, CLOCK, COMPUTE, PIDS, PERFORMANCE,
                                SUPPORTED_CLOCKS, PAGE_RETIREMENT, ACCOUNTING, ENCODER_STATS,
                                SUPPORTED_GPU_TARGET_TEMP, VOLTAGE, FBC_STATS, ROW_REMAPPER,
                                RESET_STATUS, GSP_FIRMWARE_VERSION, PCIE, FABRIC, PLATFORM
    -f,   --filename=           Log to a specified file, rather than to stdout.
    --query-gpu=                Information about GPU. Call --help-query-gpu for more info.
    --query-compute-apps=       List of currently active compute processes.
    --format=                   csv[,noheader][,nounits]
    -r    --gpu-reset           Reset the GPU (clears its runtime overrides in the mock; a pending
                                MIG mode takes effect).
    -mig  --multi-instance-gpu= Enable or disable Multi Instance GPU: 0/DISABLED, 1/ENABLED
    mig                         MIG management: -lgip, -lgipp, -cgi, -C, -dgi, -lgi, -lcip,
                                -lcipp, -cci, -dci, -lci (-i, -gi, -ci restrict them).
    topo -m                     Display the GPUDirect communication matrix.
    nvlink -s                   Display NVLink status.
"""


class Usage(Exception):
    """A bad command line: INVALID on stdout, exit 2."""


class Unrecognized(Exception):
    """A word NVIDIA's nvidia-smi does not know where it stands (a subcommand is only
    ever the first word): UNRECOGNIZED on stdout, exit 255."""


def _take(args: list, i: int, flag: str) -> tuple[str, int]:
    arg = args[i]
    if "=" in arg and arg.startswith("--"):
        return arg.split("=", 1)[1], i + 1
    if i + 1 >= len(args):
        raise Usage(flag)
    return args[i + 1], i + 2


def parse(args: list) -> dict:
    opts: dict = {"sub": None, "rest": []}
    i = 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0] if a.startswith("--") else a
        if i == 0 and not a.startswith("-"):
            opts["sub"], opts["rest"] = a, args[i + 1:]
            break
        if name in ("-h", "--help"):
            opts["mode"] = "help"
        elif name in ("-L", "--list-gpus"):
            opts["mode"] = "list"
        elif name in ("-q", "--query"):
            opts["query"] = True
        elif name in ("-x", "--xml-format"):
            opts["xml"] = True
        elif name in ("-r", "--gpu-reset"):
            opts["mode"] = "reset"
        elif name in ("--version",):
            opts["mode"] = "version"
        elif name in ("--help-query-gpu",):
            opts["mode"] = "help-query-gpu"
        elif name in ("-d", "--display", "-i", "--id", "-f", "--filename", "--query-gpu",
                      "--query-compute-apps", "--format", "-mig", "--multi-instance-gpu"):
            value, i = _take(args, i, name)
            key = {"-d": "display", "--display": "display", "-i": "id", "--id": "id",
                   "-f": "file", "--filename": "file", "-mig": "mig",
                   "--multi-instance-gpu": "mig"}.get(name, name.lstrip("-"))
            opts[key] = value
            continue
        elif a.startswith("-i") and a[2:].replace(",", "").isalnum():
            opts["id"] = a[2:]
        else:
            raise Unrecognized(a)
        i += 1
    return opts


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

    from mokka.smi import devices
    from mokka.engine import nvml
    from mokka.smi import values as v
    try:
        lib = nvml.open_library(sys.argv[0] if sys.argv else None)
    except nvml.LibraryError as exc:
        print(NO_DRIVER, file=out)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_NO_DRIVER
    except nvml.NvmlError:               # the library said why, in one line of its own
        print(NO_DRIVER, file=out)
        return EXIT_NO_DRIVER
    head = {"driver_version": lib.system_string("nvmlSystemGetDriverVersion"),
            "cuda_version": lib.cuda_version(), "attached": lib.count()}
    if mode == "version":
        drv = head["driver_version"] or "N/A"
        out.write(f"NVIDIA-SMI version  : {drv}\nNVML version        : {'.'.join(drv.split('.')[:2])}\n"
                  f"DRIVER version      : {drv}\nCUDA Version        : {head['cuda_version']}\n")
        return 0
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
    try:
        if opts.get("sub") == "topo":
            return _topo(lib, head["attached"], opts["rest"], out)
        ids = opts.get("id")
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
        gpus = devices.every(lib, head["attached"]) if ids is None else devices.pick(lib, head["attached"], ids)
    except devices.Refused as refused:
        out.write(refused.text)
        return refused.code
    now = time.time()
    stamp = time.strftime(v.TIMESTAMP_FORMAT, time.localtime(now))

    if mode == "reset":
        return _reset(lib, gpus, out)
    if opts.get("mig") is not None:
        from mokka.smi import migcmd
        return migcmd.set_modes(lib, gpus, opts["mig"], out)
    if opts.get("sub") == "mig":
        return migcmd.run(lib, gpus, mig_args, out)
    if opts.get("sub"):
        return _subcommand(opts["sub"], opts["rest"], lib, head["attached"], gpus, out)
    if opts.get("query-gpu") is not None or opts.get("query-compute-apps") is not None:
        from mokka.smi import query
        ctx = {"driver_version": head["driver_version"], "count": head["attached"],
               "timestamp_csv": time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now))
               + ".%03d" % int((now % 1) * 1000)}
        if opts.get("format") is None:
            raise Usage("--format")
        try:
            if opts.get("query-gpu") is not None:
                out.write(query.gpu_csv(gpus, opts["query-gpu"], opts["format"], ctx))
            else:
                out.write(query.apps_csv(gpus, opts["query-compute-apps"], opts["format"], ctx))
        except query.QueryError as exc:
            print(f"{exc}\n", file=out)
            return EXIT_INVALID
        return 0
    if opts.get("query") or opts.get("xml"):
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
    if opts.get("display"):
        out.write(DISPLAY_WITHOUT_QUERY)
        return EXIT_INVALID
    from mokka.smi import table
    out.write(table.render(gpus, head["driver_version"], head["cuda_version"], stamp))
    return 0


def _list(lib, count: int, out) -> int:
    """-L: one line per GPU; a refused handle is reported in place, and the run ends 15."""
    from mokka.smi import devices
    from mokka.engine import nvml
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


def _subcommand(sub: str, rest: list, lib, count: int, gpus: list, out) -> int:
    from mokka.smi import topo
    flags = set(rest)
    if sub == "nvlink":
        if flags & {"-s", "--status"}:
            out.write(topo.status(gpus))
            return 0
        raise Usage(sub)
    if sub in ("pmon", "dmon", "vgpu", "conf-compute", "drain", "nvswitch"):
        print("Not supported on the device(s)", file=out)
        return EXIT_UNKNOWN
    raise Unrecognized(sub)
