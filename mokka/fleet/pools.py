"""The pools kwok-nodes prints: from its flags, or from the chart's values file.

A pool is what one of the chart's DaemonSets stages on the nodes its selector picks: a
profile, a GPU count, a MIG layout. kwok-nodes prints, per pool, nodes that look as those
nodes would once staged, labelled with the pool's selector so that what selects the real
pool selects them too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mokka.core import names


class PoolError(ValueError):
    """A values file or flag that names no usable pool: the message says which and why."""


@dataclass(frozen=True)
class Pool:
    name: str                     # "" for the one pool of the flags
    profile: str                  # a built-in name or a file path
    gpu_count: int | None = None
    mig_layout: str = ""
    profile_text: bytes | None = None     # the chart's customConfig, when given
    labels: dict = field(default_factory=dict)


def _text(value, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise PoolError(f"{where}: must be a string")
    return str(value)


def _count(value, where: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise PoolError(f"{where}: {value!r} is not a number of GPUs (1-{names.MAX_GPUS})") from None
    if not 1 <= count <= names.MAX_GPUS or isinstance(value, bool):
        raise PoolError(f"{where}: {value!r} is out of range (1-{names.MAX_GPUS})")
    return count


def _selector(value, where: str) -> dict:
    if not isinstance(value, dict) or not value:
        raise PoolError(f"{where}: a pool needs a nodeSelector (a map of labels)")
    return {str(k): _text(v, f"{where}.{k}") for k, v in value.items()}


def from_values(values: dict, where: str) -> list[Pool]:
    """The pools of a chart values document: ``pools``, else one pool of ``gpu``."""
    if not isinstance(values, dict):
        raise PoolError(f"{where}: not a values document (a YAML mapping)")
    gpu = values.get("gpu") or {}
    if not isinstance(gpu, dict):
        raise PoolError(f"{where}: gpu must be a mapping")
    pools = values.get("pools")
    if not pools:
        mig = gpu.get("mig") or {}
        custom = _text(gpu.get("customConfig"), f"{where}: gpu.customConfig")
        return [Pool(name="", profile=_text(gpu.get("profile"), f"{where}: gpu.profile")
                     or names.DEFAULT_PROFILE,
                     gpu_count=_count(gpu.get("count"), f"{where}: gpu.count"),
                     mig_layout=_text(mig.get("layout") if isinstance(mig, dict) else None,
                                      f"{where}: gpu.mig.layout"),
                     profile_text=custom.encode() if custom else None)]
    if not isinstance(pools, list):
        raise PoolError(f"{where}: pools must be a list")
    out, seen = [], set()
    for n, entry in enumerate(pools):
        at = f"{where}: pools[{n}]"
        if not isinstance(entry, dict):
            raise PoolError(f"{at}: must be a mapping")
        name = _text(entry.get("name"), f"{at}.name")
        if not name:
            raise PoolError(f"{at}: a pool needs a name")
        if name in seen:
            raise PoolError(f"{at}: a second pool named {name!r} (pool names are unique)")
        seen.add(name)
        custom = _text(entry.get("customConfig"), f"{at}.customConfig")
        out.append(Pool(name=name, profile=_text(entry.get("profile"), f"{at}.profile")
                        or names.DEFAULT_PROFILE,
                        gpu_count=_count(entry.get("count"), f"{at}.count"),
                        mig_layout=_text(entry.get("migLayout"), f"{at}.migLayout"),
                        profile_text=custom.encode() if custom else None,
                        labels=_selector(entry.get("nodeSelector"), f"{at}.nodeSelector")))
    return out
