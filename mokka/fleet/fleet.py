"""From pools to Node objects: load each pool's profile once, shape its nodes, name them."""

from __future__ import annotations

from typing import Iterator

from mokka.core import profile as profiles
from mokka.fleet import gfd, kwok
from mokka.fleet.pools import Pool, PoolError


def _profile(pool: Pool) -> profiles.Profile:
    if pool.profile_text is not None:
        return profiles.parse(pool.profile_text, source=f"pool {pool.name or '-'} customConfig")
    return profiles.load(pool.profile)


def _counted(loaded: profiles.Profile, count: int | None) -> profiles.Profile:
    """The profile with ``count`` GPUs, as node-agent --gpu-count stages it
    (system.num_devices, bounded and merged by the profile's own rules)."""
    if count is None:
        return loaded
    from mokka.core import yamlio

    doc = dict(loaded.doc)
    doc["system"] = {**(doc.get("system") or {}), "num_devices": count}
    return profiles.parse(yamlio.dump(doc), source=loaded.source, path=loaded.path)


def _layout(loaded: profiles.Profile, wanted: str) -> list[str] | None:
    """The GPU instance profiles every GPU holds: the named layout, else the profile's own
    boot layout when it boots with MIG on, else None (MIG off)."""
    block = (loaded.devices[0].get("mig") or {}) if loaded.devices else {}
    layouts = {entry.get("name"): list(entry.get("gpu_instances") or [])
               for entry in block.get("layouts") or []}
    if wanted:
        if wanted not in layouts:
            known = ", ".join(layouts) or "none"
            raise PoolError(f"profile {loaded.source}: --mig-layout {wanted}: not one of the "
                            f"profile's mig.layouts ({known})")
        return layouts[wanted]
    if str(block.get("mode_current") or "").lower() == "enabled":
        return layouts.get(block.get("layout"), [])
    return None


def shape(pool: Pool, strategy: str, **host) -> kwok.Shape:
    loaded = _counted(_profile(pool), pool.gpu_count)
    layout = _layout(loaded, pool.mig_layout)
    system = loaded.doc.get("system") or {}
    try:
        of = kwok.shape(system, list(loaded.devices), layout, strategy, **host)
    except gfd.LabelError as exc:
        raise PoolError(f"profile {loaded.source}: {exc}") from None
    labels = {**pool.labels, **of.extra_labels}
    return kwok.Shape(of.gpu_labels, of.gpu_resources, labels, of.arch, of.cpu, of.memory, of.pods)


def node_names(prefix: str, pool: Pool, count: int) -> list[str]:
    stem = f"{prefix}-{pool.name}" if pool.name else prefix
    names = [f"{stem}-{i}" for i in range(count)]
    for name in (names[0], names[-1]):
        problem = kwok.check_name(name)
        if problem:
            raise PoolError(f"--name-prefix {prefix!r}: {problem}")
    return names


def nodes(pools: list[Pool], count: int, prefix: str, strategy: str, **host) -> Iterator[dict]:
    """``count`` Nodes per pool, every pool shaped (and checked) before the first is made."""
    shaped = [(pool, shape(pool, strategy, **host), node_names(prefix, pool, count)) for pool in pools]
    for _, of, names in shaped:
        for name in names:
            yield kwok.node(name, of)
