"""nvidia-smi's command line, parsed by hand as NVIDIA's tool reads it (its syntax is
not click's: ``-i0``, ``-mig 1``, a subcommand only as the first word), and the
messages and exit statuses the real tool answers a bad one with.
"""

from __future__ import annotations

from mokka.smi import setters

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
    --query-accounted-apps=     List of accounted compute processes (accounting mode on).
    --format=                   csv[,noheader][,nounits]
    -r    --gpu-reset           Reset the GPU (clears its runtime overrides in the mock; a pending
                                MIG mode takes effect).
    -pm,  --persistence-mode=   Set persistence mode: 0/DISABLED, 1/ENABLED
    -am,  --accounting-mode=    Enable or disable accounting: 0/DISABLED, 1/ENABLED
    -e,   --ecc-config=         Toggle ECC support (pending until the GPU is reset): 0/DISABLED, 1/ENABLED
    -p,   --reset-ecc-errors=   Reset ECC error counts to zero: 0/VOLATILE, 1/AGGREGATE
    -caa, --clear-accounted-apps  Clear the accounted processes that have terminated.
    -acp, --applications-clocks-permission=  Deprecated (as in NVIDIA's 550): changes nothing.
    -c,   --compute-mode=       Set compute mode: 0/DEFAULT, 1/EXCLUSIVE_THREAD (deprecated),
                                2/PROHIBITED, 3/EXCLUSIVE_PROCESS
    -ac,  --applications-clocks= Set application clocks: MEM_CLOCK,GRAPHICS_CLOCK
    -rac, --reset-applications-clocks  Reset the application clocks to their default.
    -lgc, --lock-gpu-clocks=    Lock the GPU clocks to a range: MIN_MHZ,MAX_MHZ (or tdp, unlimited)
    -rgc, --reset-gpu-clocks    Unlock the GPU clocks.
    -lmc, --lock-memory-clocks= Lock the memory clocks to a range: MIN_MHZ,MAX_MHZ
    -rmc, --reset-memory-clocks Unlock the memory clocks.
    -pl,  --power-limit=        Set the power limit in watts.
    -mig  --multi-instance-gpu= Enable or disable Multi Instance GPU: 0/DISABLED, 1/ENABLED
    mig                         MIG management: -lgip, -lgipp, -cgi, -C, -dgi, -lgi, -lcip,
                                -lcipp, -cci, -dci, -lci (-i, -gi, -ci restrict them).
    dmon                        Device monitoring in scrolling format ("nvidia-smi dmon -h").
    pmon                        Process monitoring in scrolling format ("nvidia-smi pmon -h").
    topo -m                     Display the GPUDirect communication matrix.
    nvlink -s                   Display NVLink status.
    nvlink -e                   Display each NVLink's error counters (replay, recovery, CRC).
"""


class Usage(Exception):
    """A bad command line: INVALID on stdout, exit 2."""


class OneAtATime(Exception):
    """Two device modifications (``-pl`` and ``-pm``, say) in one run: NVIDIA's tool does one."""


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
                      "--query-compute-apps", "--query-accounted-apps", "--format", "-mig",
                      "--multi-instance-gpu"):
            value, i = _take(args, i, name)
            key = {"-d": "display", "--display": "display", "-i": "id", "--id": "id",
                   "-f": "file", "--filename": "file", "-mig": "mig",
                   "--multi-instance-gpu": "mig"}.get(name, name.lstrip("-"))
            opts[key] = value
            continue
        elif name in setters.OPTIONS:
            action = setters.OPTIONS[name]
            value = None
            if action in setters.TAKES_VALUE:
                value, i = _take(args, i, name)
            else:
                i += 1
            if opts.get("modify"):
                raise OneAtATime(name)
            opts["modify"] = (action, name, value)
            continue
        elif a.startswith("-i") and a[2:].replace(",", "").isalnum():
            opts["id"] = a[2:]
        else:
            raise Unrecognized(a)
        i += 1
    return opts
