"""What the agent created on the host, persisted before it is created.

One JSON file at the overlay root (it survives a pod restart with the hostPath
overlay, unlike the lock's emptyDir). Paths are grouped by owner (a simulator,
or a simulator's published half such as ``pcibus:nfd``); ``dirs`` holds every
directory the agent created (shared between owners, so teardown sweeps them once,
deepest first, when empty); ``mounts`` holds bind mounts to undo; ``backups``
maps a path that existed before the agent first wrote it to where the original
was moved, so teardown can put it back (a real toolkit's CDI spec, an NFD
feature file the operator wrote). Entries are
recorded BEFORE the write (write-ahead), so a kill -9 mid-Stage leaves nothing
the next run or ``--teardown`` does not know about.
"""

from __future__ import annotations

import json
import os
import threading

from mokka.core.fsutil import atomic_write

MANIFEST_FILE = ".mokka-agent-manifest.json"
VERSION = 1


def missing_dirs(path: str) -> list[str]:
    """Ancestors of ``path`` that do not exist yet, outermost first."""
    out = []
    parent = os.path.dirname(path)
    while parent and not os.path.isdir(parent):
        out.append(parent)
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    return out[::-1]


class Manifest:
    def __init__(self, path: str, log=None):
        self.path = path
        self._log = log
        self._mu = threading.RLock()
        self._owners: dict[str, set[str]] = {}
        self._dirs: set[str] = set()
        self._mounts: set[str] = set()
        self._backups: dict[str, str] = {}
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as f:
                doc = json.loads(f.read())
            self._owners = {k: set(v) for k, v in (doc.get("owners") or {}).items()}
            self._dirs = set(doc.get("dirs") or [])
            self._mounts = set(doc.get("mounts") or [])
            self._backups = dict(doc.get("backups") or {})
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as exc:
            # A torn manifest cannot happen (atomic writes); a hand-edited one is
            # ignored loudly rather than guessed at.
            if self._log:
                self._log.error("ignoring unreadable agent manifest", file=self.path, reason=str(exc))

    def _save(self) -> None:
        for d in missing_dirs(self.path):
            self._dirs.add(d)
        doc = {"version": VERSION,
               "owners": {k: sorted(v) for k, v in sorted(self._owners.items()) if v},
               "dirs": sorted(self._dirs), "mounts": sorted(self._mounts),
               "backups": dict(sorted(self._backups.items()))}
        atomic_write(self.path, json.dumps(doc, indent=1, sort_keys=True) + "\n", 0o644)

    # --- queries -------------------------------------------------------------
    def paths(self, owner: str) -> set[str]:
        with self._mu:
            return set(self._owners.get(owner, ()))

    def owners(self) -> list[str]:
        with self._mu:
            return sorted(k for k, v in self._owners.items() if v)

    def dirs(self) -> set[str]:
        with self._mu:
            return set(self._dirs)

    def mounts(self) -> set[str]:
        with self._mu:
            return set(self._mounts)

    def extent(self) -> tuple[int, int]:
        """(paths, mounts) named: every owner's paths and every directory made, the bind mounts."""
        with self._mu:
            paths = set(self._dirs).union(*self._owners.values())
            return len(paths), len(self._mounts)

    def owned(self, path: str) -> bool:
        with self._mu:
            return any(path in paths for paths in self._owners.values())

    def backup_of(self, path: str) -> str | None:
        with self._mu:
            return self._backups.get(path)

    # --- updates (each persists only when something changed) ----------------
    def intend(self, owner: str, paths, dirs=()) -> None:
        """Record paths (and the directories about to be made for them) before writing."""
        with self._mu:
            have = self._owners.setdefault(owner, set())
            new_paths, new_dirs = set(paths) - have, set(dirs) - self._dirs
            if new_paths or new_dirs:
                have |= new_paths
                self._dirs |= new_dirs
                self._save()

    def settle(self, owner: str, paths, dropped_dirs=()) -> None:
        """After a converge: the owner has exactly ``paths``; ``dropped_dirs`` are gone."""
        with self._mu:
            paths, dropped = set(paths), set(dropped_dirs) & self._dirs
            if self._owners.get(owner, set()) != paths or dropped:
                self._owners[owner] = paths
                self._dirs -= dropped
                self._save()

    def add_backup(self, path: str, backup: str) -> None:
        with self._mu:
            if self._backups.get(path) != backup:
                self._backups[path] = backup
                self._save()

    def drop_backup(self, path: str) -> None:
        with self._mu:
            if self._backups.pop(path, None) is not None:
                self._save()

    def add_mount(self, path: str) -> None:
        with self._mu:
            if path not in self._mounts:
                self._mounts.add(path)
                self._save()

    def drop_mount(self, path: str) -> None:
        with self._mu:
            if path in self._mounts:
                self._mounts.discard(path)
                self._save()

    def delete(self) -> None:
        """The last step of teardown: forget everything and remove the file."""
        with self._mu:
            self._owners.clear()
            self._mounts.clear()
            self._backups.clear()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
