"""``nvidia-smi -mig 0|1`` and ``nvidia-smi mig ...``: MIG modes and instances, through NVML.

Each action reads and changes the board through mokka.smi.instances and prints what
NVIDIA's nvidia-smi 550 prints over the same library, words, widths and exit statuses
(measured: an NVML error ends the action with that error's code as the status). The
tables are pure functions of what NVML answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mokka.smi import instances as mi
from mokka.engine import nvml

EXIT_INVALID = 2
NO_SUPPORTED = "No MIG-supported devices found."
NO_ENABLED = "No MIG-enabled devices found."
ALL_DONE = "All done."
EARLY = "Terminating early due to previous errors."
#: What follows a mode left pending because a process holds the GPU (activation IN_USE),
#: after the GPU's bus id, as NVIDIA's nvidia-smi 550 prints it.
BUSY = ("is currently being used by one or more other processes (e.g. CUDA application or a monitoring "
        "application such as another instance of nvidia-smi). Please first kill all processes using the "
        "device and retry the command or reboot the system to make MIG mode effective.")
#: The mode words -mig takes besides numbers.
MODE_WORDS = {"DISABLED": mi.MIG_DISABLE, "ENABLED": mi.MIG_ENABLE}


HELP = """
    mig -- Multi Instance GPU management (Mokka mock).

    Usage: nvidia-smi mig [options]

    -i, -gi, -ci               restrict to these GPUs, GPU instances, compute instances
    -lgip, -lgipp              list GPU instance profiles, their possible placements
    -cgi PROFILE[:START],...   create GPU instances (-C: each with its default compute instance)
    -lgi, -dgi                 list, destroy GPU instances
    -lcip, -lcipp              list compute instance profiles, their possible placements
    -cci [PROFILE,...]         create compute instances (the default profile without one)
    -lci, -dci                 list, destroy compute instances

"""


class MigUsage(Exception):
    """A bad ``mig`` command line: the line to print, exit 2."""


# --- -mig 0|1 ---------------------------------------------------------------------------

def mode_value(text: str) -> int | str:
    """The mode -mig names, or the message that refuses it."""
    if text in MODE_WORDS:
        return MODE_WORDS[text]
    if text.isdigit():
        return int(text)
    return f"ERROR: Option {text} is invalid for -mig. Please run 'nvidia-smi -h' for help.\n"


def set_modes(lib: nvml.Library, gpus: list, text: str, out) -> int:
    mode = mode_value(text)
    if isinstance(mode, str):
        print(mode, file=out)
        return EXIT_INVALID
    if mode not in (mi.MIG_DISABLE, mi.MIG_ENABLE):
        print(f"Invalid MIG Mode: {mode}\n{EARLY}", file=out)
        return EXIT_INVALID
    verb = "enable" if mode == mi.MIG_ENABLE else "disable"
    for gpu in gpus:
        bus = gpu.bus_id()
        code, status = mi.set_mig_mode(gpu, mode)
        if code == nvml.NOT_SUPPORTED:
            print(f"Unable to {verb} MIG Mode for GPU {bus}: {lib.error_string(code)}\n"
                  "Treating as warning and moving on.", file=out)
        elif code != nvml.SUCCESS:
            print(f"Unable to {verb} MIG Mode for GPU {bus}: {lib.error_string(code)}\n{EARLY}", file=out)
            return code
        elif status == nvml.SUCCESS:
            print(f"{verb.capitalize()}d MIG Mode for GPU {bus}", file=out)
        elif status == nvml.IN_USE:
            print(f"Warning: MIG mode is in pending {verb} state for GPU {bus}:{lib.error_string(status)}\n"
                  f"{bus} {BUSY}", file=out)
        else:
            print(f"Warning: MIG mode is in pending {verb} state for GPU {bus}:{lib.error_string(status)}\n"
                  f"Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU {bus}",
                  file=out)
    print(ALL_DONE, file=out)
    return 0


# --- nvidia-smi mig: the command line -------------------------------------------------------

#: Option -> (action, takes a value: "yes", "no" or "maybe").
ACTIONS = {
    "-lgip": ("lgip", "no"), "--list-gpu-instance-profiles": ("lgip", "no"),
    "-lgipp": ("lgipp", "no"), "--list-gpu-instance-possible-placements": ("lgipp", "no"),
    "-cgi": ("cgi", "yes"), "--create-gpu-instance": ("cgi", "yes"),
    "-dgi": ("dgi", "no"), "--destroy-gpu-instance": ("dgi", "no"),
    "-lgi": ("lgi", "no"), "--list-gpu-instances": ("lgi", "no"),
    "-lcip": ("lcip", "no"), "--list-compute-instance-profiles": ("lcip", "no"),
    "-lcipp": ("lcipp", "no"), "--list-compute-instance-possible-placements": ("lcipp", "no"),
    "-cci": ("cci", "maybe"), "--create-compute-instance": ("cci", "maybe"),
    "-dci": ("dci", "no"), "--destroy-compute-instance": ("dci", "no"),
    "-lci": ("lci", "no"), "--list-compute-instances": ("lci", "no"),
}
FILTERS = {"-i": "ids", "--id": "ids", "-gi": "gis", "--gpu-instance-id": "gis",
           "-ci": "cis", "--compute-instance-id": "cis"}


@dataclass
class Args:
    action: str | None = None
    value: str | None = None
    ids: str | None = None
    gis: str | None = None
    cis: str | None = None
    default_ci: bool = False
    help: bool = False
    extra: list = field(default_factory=list)


def parse(rest: list) -> Args:
    args = Args()
    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in ("-h", "--help"):
            args.help = True
        elif name in ("-C", "--default-compute-instance"):
            args.default_ci = True
        elif name in FILTERS or name in ACTIONS:
            takes = "yes" if name in FILTERS else ACTIONS[name][1]
            value = inline if eq else None
            if value is None and takes != "no" and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                value = rest[i + 1]
                i += 1
            if value is None and takes == "yes":
                raise MigUsage(f'Option "{word}" is missing its value.')
            if name in FILTERS:
                setattr(args, FILTERS[name], value)
            else:
                args.action, args.value = ACTIONS[name][0], value
        else:
            raise MigUsage(f'Option "{word}" is not recognized.')
        i += 1
    return args


def _id_set(text: str | None) -> set | None:
    return None if text is None else {int(p) for p in text.split(",") if p.strip().isdigit()}


# --- nvidia-smi mig: the actions ------------------------------------------------------------

class Done(Exception):
    """The action ends: ``lines`` printed, ``code`` the exit status."""

    def __init__(self, lines: list, code: int = 0):
        super().__init__(code)
        self.lines, self.code = lines, code


def run(lib: nvml.Library, gpus: list, args: Args, out) -> int:
    supported = [g for g in gpus if g.mig_mode()[0] is not None]
    if not supported:
        print(NO_SUPPORTED, file=out)
        return nvml.NOT_FOUND
    enabled = [g for g in supported if g.mig_mode()[0] == mi.MIG_ENABLE]
    lines: list = []
    try:
        if args.action == "lgip":
            lines = lgip_table([(g, mi.listing_order(mi.gpu_profiles(g))) for g in enabled])
        elif args.action == "lgipp":
            lines = [ln for g in enabled for ln in lgipp_lines(g, mi.listing_order(mi.gpu_profiles(g)))]
        elif not enabled:
            lines = [NO_ENABLED]
        else:
            lines = ACTION_RUNNERS[args.action](lib, enabled, args)
    except Done as done:
        lines, code = done.lines, done.code
    else:
        code = 0
    for line in lines:
        print(line, file=out)
    return code


def _error(lib, lines: list, text: str, code: int) -> Done:
    return Done(lines + [f"{text}: {lib.error_string(code)}"], code)


def _gpu_instances(lib, gpus: list, gis: set | None) -> list:
    found = [gi for g in gpus for gi in mi.gpu_instances(g) if gis is None or gi.id in gis]
    if not found:
        raise _error(lib, [], "No GPU instances found", nvml.NOT_FOUND)
    return found


def _compute_instances(lib, gpu_instances: list, cis: set | None) -> list:
    found = [ci for gi in gpu_instances for ci in mi.compute_instances(gi) if cis is None or ci.id in cis]
    if not found:
        raise _error(lib, [], "No compute instances found", nvml.NOT_FOUND)
    return found


def _lgi(lib, gpus, args) -> list:
    return lgi_table(_gpu_instances(lib, gpus, None))


def _lci(lib, gpus, args) -> list:
    return lci_table(_compute_instances(lib, _gpu_instances(lib, gpus, _id_set(args.gis)), _id_set(args.cis)))


def _lcip(lib, gpus, args) -> list:
    return lcip_table([(gi, mi.compute_profiles(gi)) for gi in _gpu_instances(lib, gpus, _id_set(args.gis))])


def _lcipp(lib, gpus, args) -> list:
    return [ln for gi in _gpu_instances(lib, gpus, _id_set(args.gis)) for ln in lcipp_lines(gi)]


def _profile_named(profiles: list, word: str):
    """A -cgi/-cci item's profile: an ID, or a name with or without "MIG "."""
    if word.isdigit():
        return next((p for p in profiles if p.id == int(word)), None)
    return next((p for p in profiles if p.name in (word, f"MIG {word}")), None)


def _cgi(lib, gpus, args) -> list:
    lines: list = []
    for gpu in gpus:
        profiles = mi.gpu_profiles(gpu)
        for item in args.value.split(","):
            word, colon, start = item.partition(":")
            profile = _profile_named(profiles, word)
            placed = int(start) if colon and start.isdigit() else None
            code, gi = (nvml.INVALID_ARGUMENT, None) if profile is None or (colon and placed is None) \
                else mi.create_gpu_instance(gpu, profile, placed)
            if code != nvml.SUCCESS:
                lines.append(f"Unable to create a GPU instance on GPU {gpu.index:2} using profile {item}: "
                             f"{lib.error_string(code)}")
                raise _error(lib, lines, "Failed to create GPU instances", code)
            lines.append(f"Successfully created GPU instance ID {gi.id:2} on GPU {gpu.index:2} using profile "
                         f"{profile.name} (ID {profile.id:2})")
            if args.default_ci:
                lines += _create_ci(lib, gi, None, default_failure=True)
    return lines


def _create_ci(lib, gi, item: str | None, default_failure: bool = False) -> list:
    """One compute instance in gi: the default profile, or the one `item` names."""
    profiles = mi.compute_profiles(gi)
    profile = mi.default_compute_profile(gi, profiles) if item is None else _profile_named(profiles, item)
    code, ci = (nvml.INVALID_ARGUMENT, None) if profile is None else mi.create_compute_instance(gi, profile)
    where = f"on GPU {gi.gpu.index:2} GPU instance ID {gi.id:2}"
    if code == nvml.SUCCESS:
        return [f"Successfully created compute instance ID {ci.id:2} {where} using profile {profile.name} "
                f"(ID {profile.id:2})"]
    if default_failure:
        raise _error(lib, [], f"Unable to create a default compute instance {where}", code)
    raise _error(lib, [f"Unable to create a compute instance {where} using profile {item if item else 'default'}: "
                       f"{lib.error_string(code)}"], "Failed to create compute instances", code)


def _cci(lib, gpus, args) -> list:
    lines: list = []
    for gi in _gpu_instances(lib, gpus, _id_set(args.gis)):
        for item in (args.value.split(",") if args.value else [None]):
            try:
                lines += _create_ci(lib, gi, item)
            except Done as done:
                raise Done(lines + done.lines, done.code) from None
    return lines


def _dci(lib, gpus, args) -> list:
    lines: list = []
    for ci in _compute_instances(lib, _gpu_instances(lib, gpus, _id_set(args.gis)), _id_set(args.cis)):
        gi = ci.gpu_instance
        what = f"compute instance ID {ci.id:2} from GPU {gi.gpu.index:2} GPU instance ID {gi.id:2}"
        code = mi.destroy_compute_instance(ci)
        if code != nvml.SUCCESS:
            lines.append(f"Unable to destroy {what}: {lib.error_string(code)}")
            raise _error(lib, lines, "Failed to destroy compute instances", code)
        lines.append(f"Successfully destroyed {what}")
    return lines


def _dgi(lib, gpus, args) -> list:
    lines: list = []
    for gi in _gpu_instances(lib, gpus, _id_set(args.gis)):
        what = f"GPU instance ID {gi.id:2} from GPU {gi.gpu.index:2}"
        code = mi.destroy_gpu_instance(gi)
        if code != nvml.SUCCESS:
            lines.append(f"Unable to destroy {what}: {lib.error_string(code)}")
            raise _error(lib, lines, "Failed to destroy GPU instances", code)
        lines.append(f"Successfully destroyed {what}")
    return lines


ACTION_RUNNERS = {"lgi": _lgi, "lci": _lci, "lcip": _lcip, "lcipp": _lcipp, "cgi": _cgi, "cci": _cci,
                  "dci": _dci, "dgi": _dgi}


# --- the tables (pure) ---------------------------------------------------------------------

def _box(width: int, title: str, heads: list, rows: list) -> list:
    rule = "+" + "-" * (width - 2) + "+"
    out = [rule, f"| {title:<{width - 4}} |", *heads, "|" + "=" * (width - 2) + "|"]
    for row in rows:
        out += row + [rule]
    return out


def lgip_table(boards: list) -> list:
    """``-lgip``: (gpu, profiles in listing order) per MIG-enabled GPU."""
    rows = []
    for gpu, profiles in boards:
        for p in profiles:
            i, free = p.info, mi.gpu_capacity(gpu, p)
            gib = f"{i.memorySizeMB / 1024:.2f}"
            p2p = "Yes" if i.capabilities & 1 else "No"
            rows.append([f"|{gpu.index:>4}  {p.name:<16}{p.id:>4}{free or 0:>6}/{i.instanceCount:<8} {gib:<11}"
                         f"{p2p:<7}{i.multiprocessorCount:<7}{i.decoderCount:<6}{i.encoderCount:<4}|",
                         f"|{'':61}{i.copyEngineCount:<6}{i.jpegCount:<6}{i.ofaCount:<4}|"])
    heads = ["| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |",
             "|                              Free/Total   GiB              CE    JPEG  OFA  |"]
    return _box(79, "GPU instance profiles:", heads, rows)


def _placements_text(placements: list) -> str:
    starts = ",".join(str(s) for s, _ in placements)
    size = placements[0][1] if placements else 0
    return f"{'s' if len(placements) > 1 else ' '}: {{{starts}}}:{size}"


def lgipp_lines(gpu, profiles: list) -> list:
    return [f"GPU {gpu.index:2} Profile ID {p.id:2} Placement{_placements_text(mi.gpu_placements(gpu, p))}"
            for p in profiles]


def lcipp_lines(gi) -> list:
    return [f"GPU {gi.gpu.index:2} GI {gi.id:2} Profile ID {p.id:2} "
            f"Placement{_placements_text(mi.compute_placements(gi, p))}" for p in mi.compute_profiles(gi)]


def lgi_table(gpu_instances: list) -> list:
    rows = [[f"|{gi.gpu.index:>4}  {gi.profile.name:<16}{gi.profile.id:>6}{gi.id:>9}"
             f"{gi.info.placement.start:>11}:{gi.info.placement.size:<6}|"] for gi in gpu_instances]
    heads = ["| GPU   Name             Profile  Instance   Placement  |",
             "|                          ID       ID       Start:Size |"]
    return _box(57, "GPU instances:", heads, rows)


def lci_table(compute_instances: list) -> list:
    rows = [[f"|{ci.gpu_instance.gpu.index:>4}{ci.gpu_instance.id:>7}       {ci.profile.name:<16}"
             f"{ci.profile.id:>6}{ci.id:>10}{ci.info.placement.start:>11}:{ci.info.placement.size:<6}|"]
            for ci in compute_instances]
    heads = ["| GPU     GPU       Name             Profile   Instance   Placement  |",
             "|       Instance                       ID        ID       Start:Size |",
             "|         ID                                                         |"]
    return _box(70, "Compute instances:", heads, rows)


def lcip_table(gpu_instances: list) -> list:
    """``-lcip``: (GPU instance, its compute instance profiles); the default one starred."""
    rows = []
    for gi, profiles in gpu_instances:
        default = mi.default_compute_profile(gi, profiles)
        for p in profiles:
            i, free = p.info, mi.compute_capacity(gi, p)
            star = "*" if default is not None and p.index == default.index else " "
            rows.append([f"|{gi.gpu.index:>4}{gi.id:>7}       {p.name:<16}{p.id:>6}{star}{free or 0:>6}/"
                         f"{i.instanceCount:<3}{i.multiprocessorCount:>11}{i.sharedDecoderCount:>9}"
                         f"{i.sharedEncoderCount:>6}{i.sharedOfaCount:>6}   |",
                         f"|{'':62}{i.sharedCopyEngineCount:>9}{i.sharedJpegCount:>6}{'':9}|"])
    heads = ["| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
             "|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
             "|         ID                                                          CE    JPEG       |"]
    return _box(88, "Compute instance profiles:", heads, rows)
