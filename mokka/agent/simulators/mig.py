"""mig: the driver's MIG capabilities, and what each MIG device NVML reports needs.

Stage writes the driver's fixed files, on every node as the driver has them:
``/proc/driver/nvidia-caps/mig-minors``, the ``config`` and ``monitor`` capabilities
and their ``/dev/nvidia-caps`` nodes. When the node boots (the agent's first pass) or
a GPU's MIG declaration changes, it also removes the mock library's partition state
(names.MIG_STATE_FILE), as a reboot loses the real GPU instances: the next nvmlInit
starts from the profile and creates its boot layout.

Per MIG device (mokka.agent.migdevices walks NVML for them) the partition tree holds
its GPU and compute instance's ``access`` files and ``nvidia-cap`` nodes, and the
``nvidia.com/gpu`` MIG devices spec (names.CDI_SPEC_MIG_FILE, the toolkit's names).
Apply renders it once per pass; the Daemon's watcher again whenever the library
rewrites its partition state (inotify on the config directory), and every
``RESYNC_S``. A walk that fails keeps the last tree and says so once. Revoke
withdraws the spec; Discard stops the watcher and removes everything, the
partition state included.
"""

from __future__ import annotations

import json
import os
import select
import threading
import time

from mokka.agent import migdevices
from mokka.agent.desired import Desired
from mokka.agent.hostfs import CharDev, Entry, File
from mokka.agent.simulators import Host
from mokka.agent.simulators.cri import toolkit_options
from mokka.agent.supervisor import Supervisor, ThreadChild
from mokka.core import cdi, fsutil, mig, names
from mokka.core.overlay import Overlay

OWNER = "mig"
PARTITIONS = "mig:partitions"
RESYNC_S = 30.0
#: A burst of partition writes is walked once it has been quiet this long (or after MAX).
DEBOUNCE_S, DEBOUNCE_MAX_S = 0.1, 1.0


def driver_tree(ov: Overlay) -> dict[str, Entry]:
    """The driver's fixed MIG files: the capability numbering and the node-wide two."""
    out: dict[str, Entry] = {
        os.path.join(ov.proc_caps, names.PROC_MIG_MINORS_FILE): File(mig.mig_minors_text().encode(),
                                                                      names.MIG_CAP_MODE)}
    for name, minor, mode in ((names.PROC_MIG_CONFIG, names.MIG_CAP_CONFIG_MINOR, names.MIG_CONFIG_MODE),
                              (names.PROC_MIG_MONITOR, names.MIG_CAP_MONITOR_MINOR, names.MIG_CAP_MODE)):
        out[ov.proc_file(f"{names.PROC_MIG_CAPABILITY_DIR}/{name}")] = File(
            mig.access_text(minor, mode).encode(), mode)
        out[ov.cap_node(minor)] = CharDev(names.NVIDIA_CAPS_MAJOR, minor, mode)
    return out


def partition_tree(devices: list[mig.MigDevice], host: Host) -> dict[str, Entry]:
    """What the MIG devices need: capabilities (files and nodes) and their CDI devices."""
    ov, out = host.overlay, {}
    numbered = [d for d in devices if mig.has_capabilities(d.parent_minor, d.gpu_instance,
                                                           d.compute_instance)]
    for device in numbered:
        gi, ci = mig.device_minors(device)
        m, g, c = device.parent_minor, device.gpu_instance, device.compute_instance
        for capability, minor in ((mig.gi_capability(m, g), gi), (mig.ci_capability(m, g, c), ci)):
            out[ov.proc_file(mig.access_file(capability))] = File(
                mig.access_text(minor, names.MIG_CAP_MODE).encode(), names.MIG_CAP_MODE)
            out[ov.cap_node(minor)] = CharDev(names.NVIDIA_CAPS_MAJOR, minor, names.MIG_CAP_MODE)
    if numbered:
        spec = cdi.mig_spec(numbered, ov, **toolkit_options(host))
        out[spec_path(host)] = File(cdi.to_yaml(spec).encode())
    return out


def spec_path(host: Host) -> str:
    return os.path.join(host.cdi_dir, names.CDI_SPEC_MIG_FILE)


def declaration(desired: Desired) -> str:
    """What a GPU's partitions depend on: its identity, its MIG block and its partition table."""
    tables = desired.state.get("mig_tables") or []
    return json.dumps([(g.get("uuid"), g.get("minor_number"), g.get("mig"),
                        tables[g["mig"]["table"]] if "table" in (g.get("mig") or {}) else None)
                       for g in desired.state["gpus"]], sort_keys=True)


#: The library's runtime documents: the partitions, what NVML's setters set and the GPUs'
#: drain states. A booting node (and teardown) starts without them, as a reboot loses them
#: on a real node.
RUNTIME_DOCUMENTS = (names.MIG_STATE_FILE, names.SETTINGS_STATE_FILE)


def drop_runtime_documents(ov: Overlay) -> None:
    """The library's runtime documents (the partitions, the setters' settings, the drain
    states) and every file it keeps beside them (a lock, a temp), whatever a workload put at
    those names (a directory, a link: removed, not followed)."""
    try:
        config = os.open(ov.driver_config, fsutil.DIR_NOFOLLOW)
    except OSError:
        return
    try:
        for name in os.listdir(config):
            if name.startswith(RUNTIME_DOCUMENTS + tuple("." + d for d in RUNTIME_DOCUMENTS)):
                fsutil.remove_at(config, name)
    finally:
        os.close(config)


class Mig:
    name = OWNER

    def __init__(self, host: Host, library: str | None = None, resync_s: float = RESYNC_S,
                 **supervisor_options):
        self.host = host
        self.library = library or os.path.join(host.overlay.lib, names.NVML_LIB_FILE)
        self.resync_s = resync_s
        self.supervisor = Supervisor(PARTITIONS, self._spawn, host.log, **supervisor_options)
        self._mu = threading.Lock()             # one converge of the partition tree at a time
        self._declared: str | None = None
        self._said: str | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.devices: list[mig.MigDevice] = []
        self.walks = 0

    # --- Stage / Apply / Daemon -------------------------------------------------
    def stage(self, desired: Desired) -> None:
        with self._mu:
            declared = declaration(desired)
            if declared != self._declared:
                # A booting node, or GPUs that changed: partitions of the old ones are gone.
                drop_runtime_documents(self.host.overlay)
                self._declared = declared
            self.host.fs.converge(OWNER, driver_tree(self.host.overlay))

    def apply(self, desired: Desired) -> None:
        self.refresh()

    def revoke(self) -> None:
        with self._mu:
            self.host.fs.withdraw(PARTITIONS, spec_path(self.host))

    def run(self, desired: Desired, stop: threading.Event) -> None:
        self.supervisor.start()

    def reload(self, desired: Desired) -> None:
        pass                          # every pass's Apply renders the partitions again

    def discard(self) -> None:
        self.supervisor.stop()
        with self._mu:
            self.host.fs.remove_owner(PARTITIONS)
            self.host.fs.remove_owner(OWNER)
            drop_runtime_documents(self.host.overlay)
            self._declared = None

    def ready(self) -> tuple[bool, str]:
        return True, ""               # the partitions fail open: a failed walk keeps the last tree

    # --- the partitions ------------------------------------------------------------
    def refresh(self) -> list[mig.MigDevice]:
        """Walk NVML's MIG devices and converge the partition tree to them."""
        with self._mu:
            devices = self._walk()
            if devices is None:
                return self.devices
            self.host.fs.converge(PARTITIONS, partition_tree(devices, self.host))
            self.devices = devices
            return devices

    def _walk(self) -> list[mig.MigDevice] | None:
        if not os.path.isfile(self.library):
            self._say("no mock NVML library staged: no MIG devices to render", library=self.library)
            return []
        self.walks += 1
        try:
            devices = migdevices.read(self.library, self.host.overlay.profile)
        except migdevices.ReadError as exc:
            self._say("cannot read the MIG devices; keeping the last ones", error=str(exc))
            return None
        self._said = None
        return devices

    def _say(self, message: str, **fields) -> None:
        key = message + repr(sorted(fields.items()))
        if key != self._said:
            self._said = key
            self.host.log.warning(message, simulator=OWNER, **fields)

    # --- the watcher -----------------------------------------------------------------
    def _spawn(self) -> ThreadChild:
        return ThreadChild("mig-partitions", self._watch, wake=self._wake)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:
            pass

    def _watch(self, stop: threading.Event) -> None:
        from inotify_simple import INotify, flags

        mask = flags.CLOSE_WRITE | flags.MOVED_TO | flags.CREATE | flags.DELETE | flags.MOVED_FROM
        with INotify(nonblocking=True) as inotify:
            watching = False
            while not stop.is_set():
                if not watching:
                    try:
                        inotify.add_watch(self.host.overlay.driver_config, mask)
                        watching = True
                    except OSError:
                        pass          # not staged yet: the resync walks anyway
                self.refresh()
                deadline = time.monotonic() + self.resync_s
                while not stop.is_set():
                    ready, _, _ = select.select([inotify.fileno(), self._wake_r], [], [],
                                                max(deadline - time.monotonic(), 0))
                    if self._wake_r in ready:
                        _drain(self._wake_r)
                    if not ready:
                        break         # a resync is due
                    if inotify.fileno() in ready:
                        touched, gone = _settled(inotify, stop, flags.IGNORED)
                        watching = watching and not gone
                        if touched or gone:
                            break     # the partition state changed (or the directory went)


def _settled(inotify, stop: threading.Event, ignored: int) -> tuple[bool, bool]:
    """(whether the burst of events just seen touched the partition state, whether the
    watch went with its directory); waits for the burst to go quiet first (DEBOUNCE_S,
    at most DEBOUNCE_MAX_S)."""
    touched = gone = False
    first = time.monotonic()
    while not stop.is_set():
        events = inotify.read(timeout=0)
        if not events:
            if time.monotonic() - first >= DEBOUNCE_MAX_S:
                break
            more, _, _ = select.select([inotify.fileno()], [], [], DEBOUNCE_S)
            if not more:
                break
            continue
        touched = touched or any(e.name == names.MIG_STATE_FILE for e in events)
        gone = gone or any(e.mask & ignored for e in events)
    return touched, gone


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 64):
            pass
    except BlockingIOError:
        pass
