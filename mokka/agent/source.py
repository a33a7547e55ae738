"""The file state source: the profile and the topology document, watched through their directories.

A ConfigMap update renames its ``..data`` symlink and an editor's save replaces
the inode, so a watch on the file would hold the inode just replaced. We watch
the directory of every hop of a symlinked path (and of its real file), re-derive
those watches after each burst, re-read both files once the burst is quiet, and
emit a new Desired only when the bytes changed. ``--resync-interval`` re-reads
regardless, for filesystems without events. The loop and tests call
``poll_once(now)``; nothing here sleeps.
"""

from __future__ import annotations

import os

from inotify_simple import INotify, flags

from mokka.agent import desired as ds
from mokka.core import names
from mokka.core import profile as prof
from mokka.core import schema

WATCH_MASK = (flags.CREATE | flags.DELETE | flags.MOVED_TO | flags.MOVED_FROM | flags.CLOSE_WRITE
              | flags.ATTRIB | flags.DELETE_SELF | flags.MOVE_SELF)
MAX_HOPS = 40


def watch_dirs(path: str) -> set[str]:
    """Directories whose events can change what ``path`` reads as."""
    out, hop = set(), os.path.abspath(path)
    for _ in range(MAX_HOPS):
        out.add(os.path.dirname(hop))
        try:
            target = os.readlink(hop)
        except OSError:
            break
        hop = os.path.normpath(os.path.join(os.path.dirname(hop), target))
    out.add(os.path.dirname(os.path.realpath(path)))
    return out


class FileSource:
    def __init__(self, profile: str, topology: str | None, node_name: str, log,
                 resync_interval: float = 60.0, imex_channels: int = 0, mig_layout: str = "",
                 debounce: float = 0.1, max_delay: float = 1.0, identity_node: str = "",
                 gpu_count: int = 0):
        self.profile = profile or names.DEFAULT_PROFILE
        self.builtin = not prof.is_path(self.profile)     # a built-in is fixed: not watched
        self.topology = topology or None
        self.node_name, self.log = node_name, log
        self.resync_interval, self.imex_channels = resync_interval, imex_channels
        self.mig_layout = mig_layout
        self.identity_node, self.gpu_count = identity_node, gpu_count
        self.debounce, self.max_delay = debounce, max_delay
        self.generation = 0
        self.rejected: ds.DesiredError | None = None
        self._inotify = INotify(nonblocking=True)
        self._wds: dict[str, int] = {}
        self._first_event: float | None = None
        self._last_event = 0.0
        self._next_resync: float | None = None      # None: read on the first poll
        self._last_inputs: tuple | None = None
        self._rejected_inputs: tuple | None = None
        self._rewatch()

    def fileno(self) -> int:
        return self._inotify.fileno()

    def close(self) -> None:
        self._inotify.close()

    def _paths(self) -> list[str]:
        return ([] if self.builtin else [self.profile]) + ([self.topology] if self.topology else [])

    def _rewatch(self) -> None:
        wanted = set().union(*(watch_dirs(p) for p in self._paths())) if self._paths() else set()
        for d in set(self._wds) - wanted:
            try:
                self._inotify.rm_watch(self._wds.pop(d))
            except OSError:            # already gone (IN_IGNORED after a delete)
                pass
        for d in wanted - set(self._wds):
            try:
                self._wds[d] = self._inotify.add_watch(d, WATCH_MASK)
            except OSError:            # missing for now; the resync still reads it
                pass

    def next_timeout(self, now: float) -> float | None:
        """Seconds until poll_once has work without a new event (None: only events)."""
        times = []
        if self._next_resync is None:
            return 0.0
        if self.resync_interval > 0:
            times.append(self._next_resync)
        if self._first_event is not None:
            times.append(min(self._last_event + self.debounce, self._first_event + self.max_delay))
        return max(min(times) - now, 0.0) if times else None

    def poll_once(self, now: float) -> ds.Desired | None:
        """Drain events; read when a burst went quiet or a resync is due; a new state or None."""
        events = self._inotify.read(timeout=0)
        if events:
            self._first_event = self._first_event if self._first_event is not None else now
            self._last_event = now
            self._rewatch()            # a swapped ..data or a new inode moves the hops
        burst_done = self._first_event is not None and (
            now - self._last_event >= self.debounce or now - self._first_event >= self.max_delay)
        resync = self._next_resync is None or (self.resync_interval > 0 and now >= self._next_resync)
        if not (burst_done or resync):
            return None
        self._first_event = None
        self._next_resync = now + self.resync_interval
        return self._read()

    def _read(self) -> ds.Desired | None:
        try:
            path, text = prof.read(self.profile)
        except prof.ProfileError as exc:
            return self._reject((None, None), ds.DesiredError(self.profile, exc.message))
        topo_text = None
        if self.topology:
            try:
                topo_text = prof.read_file(self.topology, "topology document")
            except prof.ProfileError as exc:
                if not os.path.exists(self.topology):
                    topo_text = None    # absent: the nvlink simulator removes its copies
                else:
                    return self._reject((text, None), ds.DesiredError(self.topology, exc.message))
        inputs = (text, topo_text)
        if inputs == self._last_inputs and self.rejected is None:
            return None
        if inputs == self._last_inputs:         # back to the last good bytes
            self._accept()
            return None
        try:
            desired = ds.build(self.generation + 1, self.profile, path, text, topo_text,
                               self.topology or "", self.node_name, self.imex_channels,
                               self.mig_layout, identity_node=self.identity_node,
                               gpu_count=self.gpu_count)
        except ds.DesiredError as exc:
            return self._reject(inputs, exc)
        self.generation += 1
        self._last_inputs = inputs
        self._accept()
        if desired.unknown_keys:
            keys = list(desired.unknown_keys[:20])
            near = {key: known for key in keys if (known := schema.nearest_key(key))}
            self.log.warning("profile keys Mokka does not know are ignored, as the Go loader "
                             "ignores them", file=path, keys=keys, count=len(desired.unknown_keys),
                             generation=self.generation, **({"did_you_mean": near} if near else {}))
        return desired

    def _accept(self) -> None:
        if self.rejected is not None:
            self.log.info("desired state accepted again", generation=self.generation)
        self.rejected, self._rejected_inputs = None, None

    def _reject(self, inputs: tuple, exc: ds.DesiredError) -> None:
        if inputs != self._rejected_inputs or self.rejected is None:
            # Once per distinct bad input: a resync must not repeat the same line forever.
            self.log.error("rejected a desired-state document; keeping the last good state",
                           file=exc.file, reason=exc.reason, generation=self.generation)
        self.rejected, self._rejected_inputs = exc, inputs
        return None
