"""nvidia-smi's device modifications: ``-pl``, ``-pm``, ``-c``, ``-am``, ``-lgc``/``-rgc``,
``-lmc``/``-rmc``, ``-ac``/``-rac``, ``-e``, ``-p``, ``-caa``, each a call of NVML's setter through the library, so the
change is the node's (settings.nvml, kept by the library) and every process reads it.

Texts and exit statuses as NVIDIA's nvidia-smi 550 prints them over the same library
(tests/smi/test_setters.py and tests/native/test_setters_550.py hold both to them): a
value NVIDIA's tool refuses before asking NVML ends the run with exit status 2; an
NVML error ends it with the error's code, but a clock combination the board does not
support, which is a warning. ``-acp`` is deprecated in NVIDIA's 550: it says so for each GPU
and changes nothing (nvmlDeviceSetAPIRestriction is the way to it).
"""

from __future__ import annotations

import ctypes as C

from mokka.engine import nvml

ALL_DONE = "All done."
EARLY = "Terminating early due to previous errors."
WARNING_ONLY = "Treating as warning and moving on."
ONE_AT_A_TIME = ("Invalid combination of input arguments. Only one device modification may be done at a "
                 "time.\n\n")
NOT_VALID = "Input combination for device modification is not valid.\n\n"
BAD_OPTION = "ERROR: Option {} is invalid for {}. Please run 'nvidia-smi -h' for help.\n\n"
UNSUPPORTED_COMBINATION = ('Specified clock combination "({})" is not supported for GPU {}. Run \'nvidia-smi -q -d '
                           "SUPPORTED_CLOCKS' to see list of supported clock combinations\n" + WARNING_ONLY)
NO_CLOCK_PERMISSION = "The current user does not have permission to change clocks for GPU {}.\n" + EARLY
PERSISTENCE_WARNING = ("\nWarning: persistence mode is disabled on device {}. See the Known Issues section of the "
                       "nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more "
                       "information on how to enable persistence mode.")
BAD_LOCKED = ("Specified clocks \"{}\" are not valid. Please format input as 'gpuClkMin,gpuClkMax' or 'gpuClkVal' "
              "e.g. '--lock-gpu-clocks=1500,1500', '--lock-gpu-clocks=1500', or "
              "'--lock-gpu-clocks=tdp,unlimited'\n" + EARLY)
BAD_MEMORY_LOCKED = ("Specified clocks \"{}\" are not valid. Please format input as 'memClkMin,memClkMax' or "
                     "'memClkVal' e.g. --lock-memory-clocks=5100,5100 or --lock-memory-clocks=5100\n" + EARLY)
BAD_APPLICATIONS = ('Specified clocks "{}" are not valid. Please format input as memClk,smClk e.g. '
                    "--applications-clocks=2000,300\n" + EARLY)
EXIT_INVALID, EXIT_UNKNOWN = 2, 255

#: The options, long and short, by the modification each asks for; those taking a value.
OPTIONS = {
    "-pl": "power", "--power-limit": "power", "-pm": "persistence", "--persistence-mode": "persistence",
    "-c": "compute", "--compute-mode": "compute", "-lgc": "lock", "--lock-gpu-clocks": "lock",
    "-rgc": "unlock", "--reset-gpu-clocks": "unlock", "-lmc": "lock-memory", "--lock-memory-clocks": "lock-memory",
    "-rmc": "unlock-memory", "--reset-memory-clocks": "unlock-memory",
    "-ac": "applications", "--applications-clocks": "applications",
    "-rac": "reset-applications", "--reset-applications-clocks": "reset-applications",
    "-e": "ecc", "--ecc-config": "ecc", "-am": "accounting", "--accounting-mode": "accounting",
    "-p": "reset-ecc", "--reset-ecc-errors": "reset-ecc", "-caa": "clear-accounted",
    "--clear-accounted-apps": "clear-accounted", "-acp": "clocks-permission",
    "--applications-clocks-permission": "clocks-permission",
}
TAKES_VALUE = frozenset({"power", "persistence", "compute", "lock", "lock-memory", "applications", "ecc",
                         "accounting", "reset-ecc", "clocks-permission"})
#: nvmlEccCounterType_t by the word -p takes (as spelt: NVIDIA's tool refuses "volatile").
ECC_COUNTERS = {"VOLATILE": 0, "AGGREGATE": 1}
PERMISSION_WORDS = frozenset({"DISABLED", "ENABLED", "UNRESTRICTED", "RESTRICTED"})
DEPRECATED = "Warning: This option is deprecated and will be removed in future releases\n" + WARNING_ONLY
#: nvmlComputeMode_t by the number and the word nvidia-smi takes.
COMPUTE_MODES = {"DEFAULT": 0, "EXCLUSIVE_THREAD": 1, "PROHIBITED": 2, "EXCLUSIVE_PROCESS": 3}
ENABLE_WORDS = {"0": 0, "DISABLED": 0, "1": 1, "ENABLED": 1}
#: nvmlClockLimitId_t: NVML_CLOCK_LIMIT_ID_TDP, NVML_CLOCK_LIMIT_ID_UNLIMITED.
CLOCK_WORDS = {"tdp": 0xffffff01, "unlimited": 0xffffff02}


class Refusal(Exception):
    """What the run prints (stdout) and its exit status."""

    def __init__(self, text: str, code: int):
        super().__init__(text)
        self.text, self.code = text, code


def run(lib: nvml.Library, gpus: list, action: str, flag: str, value: str | None, out) -> int:
    try:
        return ACTIONS[action](lib, gpus, flag, value, out)
    except Refusal as refusal:
        out.write(refusal.text)
        return refusal.code


def _ended(text: str, code: int) -> Refusal:
    return Refusal(text + "\n", code if 0 < code < 256 else EXIT_UNKNOWN)


def _enable_word(value: str, flag: str, what: str) -> int:
    word = value.upper()
    if word in ENABLE_WORDS:
        return ENABLE_WORDS[word]
    if value.isdigit():
        raise _ended(f"Invalid {what}: {value}\n{EARLY}", EXIT_INVALID)
    raise Refusal(BAD_OPTION.format(value, flag), EXIT_INVALID)


def _int32(value: str) -> int | None:
    """A number as NVIDIA's tool reads one: digits, a plus sign allowed, at most 2^31 - 1."""
    digits = value[1:] if value.startswith("+") else value
    if not digits.isdigit() or not digits.isascii() or int(digits) > 2**31 - 1:
        return None
    return int(digits)


# --- power limit ---------------------------------------------------------------------------

def _watts(value: str) -> float | None:
    text = value[:-1] if value.endswith("W") else value
    try:
        watts = float(text)
    except ValueError:
        return None
    return watts if watts == watts and abs(watts) < 1e9 else None


def power(lib, gpus, flag, value, out) -> int:
    watts = _watts(value)
    if watts is None:
        raise Refusal(BAD_OPTION.format(value, flag), EXIT_INVALID)
    if watts < 0:
        raise Refusal(NOT_VALID, EXIT_UNKNOWN)
    mw = round(watts * 1000)
    for gpu in gpus:
        bus = gpu.bus_id()
        lo, hi = gpu.power_limit_constraints()
        if lo is None or not lo <= mw <= hi:
            bounds = f"{lo / 1000:.2f} W and {hi / 1000:.2f} W" if lo is not None else "N/A and N/A"
            raise _ended(f"Provided power limit {watts:.2f} W is not a valid power limit which should be between "
                         f"{bounds} for GPU {bus}\n{EARLY}", EXIT_INVALID)
        before = gpu.power_requested_limit()
        code = lib.ask("nvmlDeviceSetPowerManagementLimit", gpu.handle, C.c_uint(mw))
        if code != nvml.SUCCESS:
            raise _ended(f"Failed to set power management limit for GPU {bus}: {lib.error_string(code)}\n{EARLY}",
                         code)
        was = f"{before / 1000:.2f} W" if isinstance(before, int) else "N/A"
        print(f"Power limit for GPU {bus} was set to {mw / 1000:.2f} W from {was}.", file=out)
    print(ALL_DONE, file=out)
    return 0


# --- modes -----------------------------------------------------------------------------------

def persistence(lib, gpus, flag, value, out) -> int:
    mode = _enable_word(value, flag, "persistence mode")
    word = "Enabled" if mode else "Disabled"
    return _set_mode(lib, gpus, out, mode, lambda gpu: gpu.persistence_mode(), "nvmlDeviceSetPersistenceMode",
                     already=f"Persistence mode is already {word} for GPU {{bus}}.",
                     done=f"{word} persistence mode for GPU {{bus}}.",
                     failed="Unable to set persistence mode for GPU {bus}: {error}")


def _set_mode(lib, gpus, out, mode: int, current, setter: str, already: str, done: str, failed: str,
              warn_unsupported: bool = False) -> int:
    """Set a mode on each GPU that does not have it, as NVIDIA's nvidia-smi words each step
    (``{bus}`` and ``{error}`` in the texts); NOT_SUPPORTED is a warning where
    ``warn_unsupported``, else every failure ends the command."""
    for gpu in gpus:
        bus = gpu.bus_id()
        if current(gpu) == mode:
            print(already.format(bus=bus), file=out)
            continue
        code = lib.ask(setter, gpu.handle, C.c_int(mode))
        if code == nvml.NOT_SUPPORTED and warn_unsupported:
            print(f"{failed.format(bus=bus, error=lib.error_string(code))}\n{WARNING_ONLY}", file=out)
        elif code != nvml.SUCCESS:
            raise _ended(f"{failed.format(bus=bus, error=lib.error_string(code))}\n{EARLY}", code)
        else:
            print(done.format(bus=bus), file=out)
    print(ALL_DONE, file=out)
    return 0


def compute(lib, gpus, flag, value, out) -> int:
    if value.isdigit():
        mode = int(value)
        if mode not in COMPUTE_MODES.values():
            raise _ended(f"Invalid compute mode: {value}\n{EARLY}", EXIT_INVALID)
    elif value in COMPUTE_MODES:
        mode = COMPUTE_MODES[value]
    else:
        raise Refusal(BAD_OPTION.format(value, flag), EXIT_INVALID)
    if mode == COMPUTE_MODES["EXCLUSIVE_THREAD"]:
        print(f"Exclusive_Thread was deprecated! Use value 3:Exclusive_Process instead.\n{WARNING_ONLY}\n{ALL_DONE}",
              file=out)
        return 0
    name = next(k for k, v in COMPUTE_MODES.items() if v == mode)
    return _set_mode(lib, gpus, out, mode, lambda gpu: gpu.compute_mode(), "nvmlDeviceSetComputeMode",
                     already=f"Compute mode is already set to {name} for GPU {{bus}}.",
                     done=f"Set compute mode to {name} for GPU {{bus}}.",
                     failed="Unable to set the compute mode for GPU {bus}: {error}")


def accounting(lib, gpus, flag, value, out) -> int:
    mode = _enable_word(value, flag, "accounting mode")
    word = "Enabled" if mode else "Disabled"
    return _set_mode(lib, gpus, out, mode, lambda gpu: gpu.accounting_mode(), "nvmlDeviceSetAccountingMode",
                     already=f"Accounting Mode is already {word} for GPU {{bus}}.",
                     done=f"{word} Accounting Mode for GPU {{bus}}.",
                     failed="Unable to set Accounting Mode for GPU {bus}: {error}", warn_unsupported=True)


def ecc(lib, gpus, flag, value, out) -> int:
    mode = _enable_word(value, flag, "ECC configuration code")
    word = "Enabled" if mode else "Disabled"
    changed = False
    for gpu in gpus:
        bus = gpu.bus_id()
        if gpu.ecc_mode()[1] == mode:
            print(f"ECC support is already {word} for GPU {bus}.", file=out)
            continue
        code = lib.ask("nvmlDeviceSetEccMode", gpu.handle, C.c_int(mode))
        if code != nvml.SUCCESS:
            raise _ended(f"Unable to set ECC config for GPU {bus}: {lib.error_string(code)}\n{EARLY}", code)
        print(f"{word} ECC support for GPU {bus}.", file=out)
        changed = True
    print(ALL_DONE + ("\nReboot required." if changed else ""), file=out)
    return 0


def reset_ecc(lib, gpus, flag, value, out) -> int:
    counter = ECC_COUNTERS.get(value, _int32(value))
    if counter is None:
        raise Refusal(BAD_OPTION.format(value, flag), EXIT_INVALID)
    if counter not in ECC_COUNTERS.values():
        raise _ended(f"Invalid ECC type: {value}\n{EARLY}", EXIT_INVALID)
    word = "aggregate" if counter else "volatile"
    for gpu in gpus:
        bus = gpu.bus_id()
        code = lib.ask("nvmlDeviceClearEccErrorCounts", gpu.handle, C.c_int(counter))
        if code == nvml.NOT_SUPPORTED:
            print(f"ECC features not supported for GPU {bus}.\n{WARNING_ONLY}", file=out)
        elif code != nvml.SUCCESS:
            raise _ended(f"Unable to clear ECC errors for GPU {bus}: {lib.error_string(code)}\n{EARLY}", code)
        else:
            print(f"Reset {word} ECC errors to zero for GPU {bus}.", file=out)
    print(ALL_DONE, file=out)
    return 0


def clear_accounted(lib, gpus, flag, value, out) -> int:
    for gpu in gpus:
        bus = gpu.bus_id()
        code = lib.ask("nvmlDeviceClearAccountingPids", gpu.handle)
        if code == nvml.NOT_SUPPORTED:
            print(f"Unable to clear Accounted PIDs for GPU {bus}: {lib.error_string(code)}\n{WARNING_ONLY}", file=out)
        elif code != nvml.SUCCESS:
            raise _ended(f"Unable to clear Accounted PIDs for GPU {bus}: {lib.error_string(code)}\n{EARLY}", code)
        else:
            print(f"Cleared Accounted PIDs for GPU {bus}.", file=out)
    print(ALL_DONE, file=out)
    return 0


def clocks_permission(lib, gpus, flag, value, out) -> int:
    if value not in PERMISSION_WORDS and _int32(value) is None:
        raise Refusal(BAD_OPTION.format(value, flag), EXIT_INVALID)
    for _ in gpus:
        print(DEPRECATED, file=out)
    print(ALL_DONE, file=out)
    return 0


# --- clocks ------------------------------------------------------------------------------------

def _clock_result(lib, gpu, code: int, combination: str, done: str, out) -> None:
    """A clock change's outcome: done (and the persistence warning), a warning, or the end."""
    bus = gpu.bus_id()
    if code == nvml.INVALID_ARGUMENT:
        print(UNSUPPORTED_COMBINATION.format(combination, bus), file=out)
    elif code == nvml.NO_PERMISSION:
        raise _ended(NO_CLOCK_PERMISSION.format(bus), code)
    elif code != nvml.SUCCESS:
        raise _ended(f"Unable to change clocks for GPU {bus}: {lib.error_string(code)}\n{EARLY}", code)
    elif done:
        print(done.format(bus), file=out)
        if gpu.persistence_mode() == 0:
            print(PERSISTENCE_WARNING.format(bus), file=out)


def _locked_pair(value: str) -> tuple:
    parts = value.split(",")
    if len(parts) == 1:
        parts = parts * 2
    words = [p.lower() for p in parts]
    if len(parts) == 2 and all(w in CLOCK_WORDS for w in words):
        return (CLOCK_WORDS[words[0]], CLOCK_WORDS[words[1]]), (words[0], words[1])
    if len(parts) == 2 and all(p.isdigit() and len(p) <= 9 for p in parts):
        return (int(parts[0]), int(parts[1])), (parts[0], parts[1])
    raise _ended(BAD_LOCKED.format(parts[0]), EXIT_INVALID)


def lock(lib, gpus, flag, value, out) -> int:
    (lo, hi), shown = _locked_pair(value)
    combination = f"gpuClkMin {shown[0]}, gpuClkMax {shown[1]}"
    for gpu in gpus:
        code = lib.ask("nvmlDeviceSetGpuLockedClocks", gpu.handle, C.c_uint(lo), C.c_uint(hi))
        _clock_result(lib, gpu, code, combination, f'GPU clocks set to "({combination})" for GPU {{}}', out)
    print(ALL_DONE, file=out)
    return 0


def lock_memory(lib, gpus, flag, value, out) -> int:
    parts = value.split(",")
    parts = parts * 2 if len(parts) == 1 else parts
    if len(parts) != 2 or not all(p.isdigit() and len(p) <= 9 for p in parts):
        raise _ended(BAD_MEMORY_LOCKED.format(value), EXIT_INVALID)     # the whole value, unlike -lgc
    lo, hi = int(parts[0]), int(parts[1])
    combination = f"memClkMin {lo}, memClkMax {hi}"
    for gpu in gpus:
        code = lib.ask("nvmlDeviceSetMemoryLockedClocks", gpu.handle, C.c_uint(lo), C.c_uint(hi))
        _clock_result(lib, gpu, code, combination, f'Memory clocks set to "({combination})" for GPU {{}}', out)
    print(ALL_DONE, file=out)
    return 0


def applications(lib, gpus, flag, value, out) -> int:
    parts = value.split(",")
    if len(parts) != 2 or not all(p.isdigit() and len(p) <= 9 for p in parts):
        raise _ended(BAD_APPLICATIONS.format(value), EXIT_INVALID)
    mem, gfx = int(parts[0]), int(parts[1])
    combination = f"MEM {mem}, SM {gfx}"
    for gpu in gpus:
        code = lib.ask("nvmlDeviceSetApplicationsClocks", gpu.handle, C.c_uint(mem), C.c_uint(gfx))
        _clock_result(lib, gpu, code, combination, f'Applications clocks set to "({combination})" for GPU {{}}', out)
    print(ALL_DONE, file=out)
    return 0


def _reset_clocks(function: str):
    def reset(lib, gpus, flag, value, out) -> int:
        for gpu in gpus:
            _clock_result(lib, gpu, lib.ask(function, gpu.handle), "", "", out)
        print(ALL_DONE, file=out)
        return 0
    return reset


ACTIONS = {"power": power, "persistence": persistence, "compute": compute, "ecc": ecc, "lock": lock,
           "accounting": accounting,
           "applications": applications, "unlock": _reset_clocks("nvmlDeviceResetGpuLockedClocks"),
           "lock-memory": lock_memory, "unlock-memory": _reset_clocks("nvmlDeviceResetMemoryLockedClocks"),
           "reset-applications": _reset_clocks("nvmlDeviceResetApplicationsClocks"),
           "reset-ecc": reset_ecc, "clear-accounted": clear_accounted, "clocks-permission": clocks_permission}
