"""The container environment: the env table and its precedence.

Precedence, in one place:

* a value the container already sets wins over Mokka's default for a
  selected surface (a workload may point MOCK_NVML_CONFIG elsewhere);
* except the two switches that keep an unselected surface off —
  MOCK_IB=off (GPU without InfiniBand) and MOCK_NVML_VISIBLE_DEVICES=none
  (InfiniBand without GPU) — which are forced: the annotations decide what a
  container gets, not an environment baked into its image.

Only keys whose effective value changes are emitted. An untouched key in the
adjustment would make the runtime record it as owned by this plugin, turning
another plugin's edit of the same key into a conflict that fails creation.

Duplicate keys: runc (like Go's os/exec) resolves a repeated key to its LAST
occurrence, so that is the value the container would see and the value every
rule here reads and compares against.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

from mokka.core import names
from mokka.core.overlay import container_overlay, gpu_env, ib_env, topology_env
from mokka.nri.inject.gpu import is_mig_id
from mokka.nri.inject.model import Config, NodeView

SEARCH_PATH_SEPARATOR = ":"
#: ld.so splits LD_PRELOAD on colons and on whitespace alike.
_PRELOAD_SPLIT = re.compile(r"[:\s]+")


#: Joins the entries; no entry that reaches a process can contain it.
_SEP = "\0"


class EnvSet:
    """The container's effective environment plus this decision's edits.

    A decision reads a dozen keys of an environment that carries ~100 service
    variables, so the entries are not split into a dict: they are joined once
    (NUL-separated; no entry can hold a NUL, execve would refuse it) and each
    key looked up from the end, the last occurrence being the one in effect.
    An environment where that cannot hold (a NUL inside an entry, a
    non-string) takes the dict route.
    """

    __slots__ = ("_joined", "_entries", "_authored", "_edits", "_looked_up")

    def __init__(self, entries: Iterable[str]):
        entries = tuple(entries)
        self._entries: tuple[str, ...] | None = entries
        self._joined: str | None = None
        self._authored: dict[str, str] = {}
        self._edits: dict[str, str] = {}
        self._looked_up: dict[str, str | None] = {}     # each key searched for once
        try:
            # No entry may hold a NUL (one separator per entry): a memchr, not a count.
            clean = _SEP not in "".join(entries)
        except TypeError:
            clean = False
        if clean:
            self._joined = _SEP + _SEP.join(entries)
            return
        # dict() keeps the last of duplicate keys: the value the process sees.
        self._authored = dict(item.split("=", 1) for item in entries
                              if isinstance(item, str) and item.find("=") > 0)

    @classmethod
    def of_joined(cls, text: str) -> "EnvSet":
        """The environment whose entries each follow a NUL in ``text`` (the
        caller made sure no entry holds one): no per-entry object is made."""
        env = cls.__new__(cls)
        env._joined, env._entries = text, None
        env._authored, env._edits, env._looked_up = {}, {}, {}
        return env

    def entries(self) -> tuple[str, ...]:
        """The container's entries, as given."""
        if self._entries is None:
            self._entries = tuple(self._joined.split(_SEP)[1:])
        return self._entries

    def _authored_value(self, key: str) -> str | None:
        looked_up = self._looked_up
        if key in looked_up:
            return looked_up[key]
        joined = self._joined
        if joined is None:
            value = self._authored.get(key)
        else:
            value = None
            if key and "=" not in key and _SEP not in key:     # else no entry has such a key
                at = joined.rfind(f"{_SEP}{key}=")
                if at >= 0:
                    start = at + len(key) + 2
                    end = joined.find(_SEP, start)
                    value = joined[start:] if end < 0 else joined[start:end]
        looked_up[key] = value
        return value

    def authored(self, key: str) -> str | None:
        """The container's own value of ``key`` (the last occurrence), or None."""
        return self._authored_value(key)

    def reads(self) -> tuple[tuple[str, str | None], ...]:
        """Every key whose authored value was consulted so far, with that value."""
        return tuple(self._looked_up.items())

    def agrees(self, probes: "Probes") -> bool:
        """Whether every key of ``probes`` (``probes_for``) has the value
        given: ``authored`` for each, without the per-key bookkeeping (the
        decision memo asks this of every request)."""
        pattern, expected, valued = probes
        joined = self._joined
        if joined is None:
            authored = self._authored
            return all(authored.get(key) == value for key, value in expected)
        if pattern is None:
            return not valued
        # One scan of the environment for every key at once; dict() keeps the
        # last occurrence of a key, the one in effect. Equal means each set
        # key has its value and no unset key occurs.
        return dict(pattern.findall(joined)) == valued

    def get(self, key: str) -> str | None:
        if key in self._edits:
            return self._edits[key]
        return self._authored_value(key)

    def default(self, key: str, value: str) -> None:
        """Set ``key`` unless the container (or an earlier step) already has it."""
        if self.get(key) is None:
            self._edits[key] = value

    def force(self, key: str, value: str) -> None:
        self._edits[key] = value

    def prepend(self, key: str, entry: str, fallback: str = "") -> None:
        """Put ``entry`` first in a colon list, unless it is already in it.

        An absent or empty list becomes ``entry`` followed by ``fallback``.
        """
        current = self.get(key)
        if not current:
            self._edits[key] = f"{entry}{SEARCH_PATH_SEPARATOR}{fallback}" if fallback else entry
            return
        wanted = entry.rstrip("/") or entry
        if any((part.rstrip("/") or part) == wanted for part in current.split(SEARCH_PATH_SEPARATOR)):
            return
        self._edits[key] = f"{entry}{SEARCH_PATH_SEPARATOR}{current}"

    def append_preload(self, key: str, entries: Iterable[str]) -> None:
        """Append entries behind the container's own preloads, each at most once.

        Behind, because a workload's own LD_PRELOAD keeps priority over the shims.
        """
        current = self.get(key) or ""
        present = set(_PRELOAD_SPLIT.split(current)) if current else set()
        added = []
        for entry in entries:
            if entry and entry not in present:
                present.add(entry)
                added.append(entry)
        if not added:
            return
        tail = SEARCH_PATH_SEPARATOR.join(added)
        self._edits[key] = f"{current}{SEARCH_PATH_SEPARATOR}{tail}" if current.strip() else tail

    def changed(self) -> tuple[tuple[str, str], ...]:
        """The keys whose effective value moved, in the order first touched."""
        authored = self._authored_value
        return tuple((key, value) for key, value in self._edits.items()
                     if authored(key) != value)


#: ``probes_for``'s result: a pattern that finds every probed key's entries
#: in the joined environment (None: no key to probe), each key with the value
#: it must have (None: unset), and the set ones alone as a dict.
Probes = tuple["re.Pattern[str] | None", tuple[tuple[str, "str | None"], ...], dict[str, str]]


def probes_for(reads: tuple[tuple[str, str | None], ...]) -> Probes:
    """``reads`` (``EnvSet.reads``) made ready for ``EnvSet.agrees``. A key
    no entry can have (empty, or holding "=" or NUL) always reads None: left
    out of the pattern, never of the comparison."""
    keys = [key for key, _ in reads if key and "=" not in key and _SEP not in key]
    # Each key is followed by "=", so a key that begins another ("MOCK_IB",
    # "MOCK_IB_X") still matches only its own entries.
    pattern = re.compile(f"{_SEP}({'|'.join(map(re.escape, keys))})=([^{_SEP}]*)") \
        if keys else None
    return pattern, tuple(reads), {key: value for key, value in reads if value is not None}


@functools.lru_cache(maxsize=16)
def _table(mount_path: str, ib_tier: str, pci_tree: bool) -> tuple[dict[str, str], dict[str, str]]:
    """The GPU and IB rows of the env table for a mount path (read-only: shared)."""
    mount = container_overlay(mount_path)
    return gpu_env(mount, pci_tree=pci_tree), ib_env(mount, ib_tier)


def apply_table(env: EnvSet, config: Config, view: NodeView, *, gpu: bool, infiniband: bool,
                pci_tree: bool = True) -> None:
    """The env table: turn on only what was selected, switch off the rest.
    ``pci_tree``: MOCK_PCI_ROOT with the GPU rows (libmockfs's root)."""
    gpu_vars, ib_vars = _table(config.overlay_mount_path, config.infiniband_tier, pci_tree)
    if gpu:
        _defaults(env, gpu_vars)
        # The Go reference's contract for workloads: the node name and where the
        # topology document is inside the container, only when both mean something.
        # The mock library reads neither (compile applied the document: config.nvml).
        if config.node_name and view.topology_staged and config.topology_mount_path:
            _defaults(env, topology_env(config.node_name, config.topology_mount_path))
    if infiniband:
        _defaults(env, ib_vars)
    elif gpu:
        # The IB shims are preloaded for GPU containers too; off makes them no-ops.
        env.force(names.ENV_IB, names.IB_OFF)
    if infiniband and not gpu:
        # No /dev/nvidiaN here, so the staged nvidia-smi would otherwise show
        # every GPU on the node.
        env.force(names.ENV_NVML_VISIBLE_DEVICES, names.VISIBLE_NONE)


def name_allocated(env: EnvSet, allocated_ids: tuple[str, ...]) -> None:
    """A container allocated MIG devices by name sees those: the device plugin's ids
    go into both visible-devices variables it does not set itself (the mock library
    reads MOCK_NVML_VISIBLE_DEVICES; NVIDIA's stack reads the other)."""
    if not any(is_mig_id(device_id) for device_id in allocated_ids):
        return
    listed = ",".join(allocated_ids)
    env.default(names.ENV_NVML_VISIBLE_DEVICES, listed)
    env.default(names.ENV_NVIDIA_VISIBLE_DEVICES, listed)


def _defaults(env: EnvSet, table: dict[str, str]) -> None:
    for key, value in table.items():
        env.default(key, value)
