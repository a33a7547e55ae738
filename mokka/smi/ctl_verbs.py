"""``mokka ctl``'s verbs, once the command line is parsed: each takes the mock NVML
library, the visible GPUs (ctl_node.targets), the overrides directory and the parsed
options, prints what it did and returns the exit status. Overrides are written through
mokka.engine.overrides (YAML and compiled companion together), events through ctl_events,
injected errors through ctl_inject."""

from __future__ import annotations

import json
import os

from mokka.core import names
from mokka.engine import overrides as ovr
from mokka.smi import ctl
from mokka.smi.ctl_node import Fail, bus_id, board, named, reset_settings, target, undrain, xid_target


def status(lib, gpus: list, directory: str, opts) -> int:
    def doc(path):
        try:
            return ovr.read(path) or {}
        except ovr.OverridesError as exc:
            return {"error": str(exc)}
    listed = [{"index": t.index, "physical_index": t.physical, "uuid": t.uuid,
               "overrides": doc(ovr.scope_path(directory, t.physical)),
               "lasting": doc(os.path.join(directory, names.overrides_lasting_file(t.physical)))}
              for t in gpus]
    print(json.dumps({"overrides": directory, "all": doc(ovr.scope_path(directory, None)),
                      "gpus": listed}, indent=2))
    return 0


def xid(lib, gpus: list, directory: str, opts) -> int:
    from mokka.smi.ctl_events import raise_xid

    t = xid_target(lib, gpus, opts.gpu)
    try:
        code = ctl.parse_xid_code(opts.code)
    except ctl.CtlError as exc:
        raise Fail(str(exc))
    return raise_xid(lib.node_path(names.NODE_PATH_XID_EVENTS), t, bus_id(lib, t), code,
                     opts.kmsg_path, opts.node_name)


def ecc(lib, gpus: list, directory: str, opts) -> int:
    from mokka.smi import ctl_inject
    return ctl_inject.ecc(lib, target(gpus, opts.gpu), directory, opts)


def nvlink(lib, gpus: list, directory: str, opts) -> int:
    from mokka.smi import ctl_inject
    return ctl_inject.nvlink(lib, target(gpus, opts.gpu), directory, opts)


def set_(lib, gpus: list, directory: str, opts) -> int:
    t = target(gpus, opts.gpu)
    try:
        change = ctl.parse_assignments(opts.assignments, board(lib, t))
    except ctl.CtlError as exc:
        raise Fail(str(exc))
    ovr.update(directory, t.physical, change)
    print(f"{named(t)}: set {' '.join(opts.assignments)}")
    return 0


def reset(lib, gpus: list, directory: str, opts) -> int:
    kept = ""
    if opts.lasting and ovr.reset_lasting(directory, [t.physical for t in gpus if opts.gpu is None]
                                          or [target(gpus, opts.gpu).physical]):
        kept = "; what a GPU reset keeps dropped too"
    if opts.gpu is None:
        dropped = ovr.clear(directory)
        left = [t for t in gpus if undrain(lib, t)]       # before the settings, which hold it
        reset_settings(lib, [t.physical for t in gpus])
        print(f"every GPU: {dropped} override document{'' if dropped == 1 else 's'} dropped{kept}"
              + "".join(f"; {named(t)} left the drain state" for t in left))
        return 0
    t = target(gpus, opts.gpu)
    dropped = ovr.reset(directory, [t.physical])
    left = "; drain state left" if undrain(lib, t) else ""      # before the settings, which hold it
    reset_settings(lib, [t.physical])
    print(f"{named(t)}: {'overrides dropped' if dropped else 'no overrides to drop'}{kept}{left}")
    return 0


VERBS = {"status": status, "xid": xid, "ecc": ecc, "nvlink": nvlink, "set": set_, "reset": reset}
