"""``nvidia-smi drain``: query and change a GPU's drain state by its PCI address, through
nvmlDeviceQueryDrainState / nvmlDeviceModifyDrainState, with NVIDIA 550's texts and exit
codes (its binary run over the same library). -r (remove) and -d (discover) fail as
NVIDIA's does over the mock: a GPU that cannot be removed, nothing to discover.
"""

from __future__ import annotations

import ctypes as C
import re

from mokka.engine import nvml

EXIT_INVALID, EXIT_UNKNOWN = 2, 255
HELP = """
    drain -- Display drain state information about the system as well as remove and discover devices.

    Usage: nvidia-smi drain [options]

    Options include:
    [-p | --pciid]: GPU PCI ID in the format XXXX:YY.Z.a
                   where XXXX = domain
                         YY   = bus
                         Z    = device                         a    = function
    [-m | --modify]: Modify the drain state of a GPU specified by -p.
   Persistence mode must be disabled to perform this function.
                   0 = not draining
                   1 = draining
    [-q | --query]: Query the drain state of a GPU specified by -p.
    [-r | --remove]: If possible, remove the GPU specified by -p.
                   The GPU must have already been put in a drain state using -m and
                   persistence mode for this GPU must be disabled.

    [-d | --discover]: Discover all GPUs on the system that had previously been removed.
    [-h | --help]: Display help information


"""
#: What -p takes: NVIDIA's binary parses a four-digit domain only.
_PCI = re.compile(r"([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")
_NAMES = {"-p": "p", "--pciid": "p", "-m": "m", "--modify": "m", "-q": "q", "--query": "q",
          "-r": "r", "--remove": "r", "-d": "d", "--discover": "d", "-h": "h", "--help": "h"}
_STATES = {0: "not draining.", 1: "draining."}


def _pci_info(text: str):
    from mokka.engine import nvml_types
    match = _PCI.fullmatch(text)
    if match is None:
        return None
    info = nvml_types.PciInfo()
    info.domain, info.bus, info.device = (int(match.group(k), 16) for k in (1, 2, 3))
    info.busIdLegacy = f"{info.domain:04X}:{info.bus:02X}:{info.device:02X}.0".encode()
    info.busId = f"{info.domain:08X}:{info.bus:02X}:{info.device:02X}.0".encode()
    return info


def run(lib: nvml.Library, rest: list, out) -> int:
    opts: dict = {}
    words = iter(rest)
    for word in words:
        key = _NAMES.get(word)
        if key is None:
            print(f'Option "{word}" is not recognized.', file=out)
            return EXIT_INVALID
        opts[key] = next(words, None) if key in ("p", "m") else True
        if opts[key] is None:
            print(f'Option "{word}" is missing its value.', file=out)
            return EXIT_INVALID
    if not opts or "h" in opts:
        out.write(HELP)
        return 0
    if "d" in opts:
        print("Failed to perform a PCI discover for GPUs.", file=out)
        return EXIT_UNKNOWN
    if "m" in opts and opts["m"] not in ("0", "1"):
        if opts["m"].isascii() and opts["m"].isdigit():
            opts["m"] = "0"                      # NVIDIA's binary: any other number leaves the state
        else:
            print(f'Option "{opts["m"]}" is invalid for "-m".', file=out)
            return EXIT_INVALID
    if "p" not in opts:
        print("Must specify -p with this option.", file=out)
        return EXIT_INVALID
    info = _pci_info(opts["p"])
    if info is None:
        print("Failed to parse device specified at the command-line", file=out)
        return EXIT_INVALID
    where = f"{info.domain:08X}:{info.bus:02X}:{info.device:02X}.0"
    if "m" in opts:
        state = int(opts["m"])
        if lib.ask("nvmlDeviceModifyDrainState", C.byref(info), C.c_uint(state)) != nvml.SUCCESS:
            print("Failed to modify the GPU drain state.", file=out)
            return EXIT_UNKNOWN
        print(f"Successfully set GPU {where} drain state to: {_STATES[state]}", file=out)
    if "q" in opts:
        current = C.c_uint(0)
        if lib.ask("nvmlDeviceQueryDrainState", C.byref(info), C.byref(current)) != nvml.SUCCESS:
            print("Failed to query the GPU drain state.", file=out)
            return EXIT_UNKNOWN
        print(f"The current drain state of GPU {where} is: {_STATES.get(current.value, 'draining.')}",
              file=out)
    if "r" in opts:
        print("Failed to remove the specified GPU.", file=out)
        return EXIT_UNKNOWN
    return 0


def undrain(lib: nvml.Library, index: int) -> bool:
    """Take visible GPU ``index`` out of the drain state, as a reset does (``mokka ctl
    reset``): whether it was draining. NvmlError when it cannot be read or changed; a GPU
    NVML cannot open (a lost one) is left as it is, as a reset cannot reach it either."""
    from mokka.engine import nvml_types
    info, state = nvml_types.PciInfo(), C.c_uint(0)
    try:
        handle = lib.handle(index)
    except nvml.NvmlError:
        return False
    lib.call("nvmlDeviceGetPciInfo_v3", handle, C.byref(info))
    lib.call("nvmlDeviceQueryDrainState", C.byref(info), C.byref(state))
    if state.value == 0:
        return False
    lib.call("nvmlDeviceModifyDrainState", C.byref(info), C.c_uint(0))
    return True
