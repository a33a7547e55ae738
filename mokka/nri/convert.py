"""The only translation between NRI protobuf and the decision's plain data.

Inbound (``pod_from_pb``, ``container_from_pb``) is nil-tolerant and copies
out of the runtime's messages what the decision reads, so nothing protobuf
reaches ``mokka.nri.inject``; a malformed entry is dropped, never a reason to
fail the container. It runs on every CreateContainer, so it reads no more than
that: the driver decodes the request as ``CreateContainerRequestRead``, which
leaves mount sources and options, hooks, rlimits, args and labels undecoded.
It also takes the full messages (``PodSandbox``, ``Container``).
Outbound, ``adjustment_to_pb`` renders an Adjustment and ``response_bytes``
the whole CreateContainerResponse; CDI names go into
ContainerAdjustment.CDI_devices only for a runtime that applies them.
"""

from __future__ import annotations

from mokka.core import names
from mokka.nri.inject import model
from mokka.nri.inject.env import EnvSet
from mokka.nri.proto import nri_pb2


def _mapping(pb_map) -> dict[str, str]:
    # A copy: the runtime's message stays its own. By key, as dict(pb_map)
    # goes through the Mapping ABC's Python-level iterator (twice as slow).
    return {key: pb_map[key] for key in pb_map} if pb_map else {}


def _holding(raw: list[bytes], text: str) -> list[bytes]:
    """The raw entries (``ContainerRead``'s mounts, annotations) that hold
    ``text``: one search of them all first, as most requests have none."""
    needle = text.encode()
    return [entry for entry in raw if needle in entry] if needle in b"".join(raw) else []


def _cdi_annotations(annotations) -> dict[str, str]:
    """A container's CRI CDI annotations (``cdi.k8s.io/...``), the only ones
    a rule reads (mokka.nri.inject.gpu.cdi_names). ``ContainerRead`` carries
    each map entry as its bytes: only those that hold the prefix are decoded."""
    if not annotations:
        return {}
    prefix = names.CDI_CRI_ANNOTATION_PREFIX
    if type(annotations) is not _REPEATED:                      # a map: Container
        return {key: annotations[key] for key in annotations if key.startswith(prefix)}
    out = {}
    for entry in _holding(annotations[:], prefix):   # in wire order: a key's last value wins
        read = _read_annotation(entry)
        if read.key.startswith(prefix):
            out[read.key] = read.value
    return out


def pod_from_pb(pod: nri_pb2.PodSandbox | nri_pb2.PodSandboxRead | None) -> model.Pod:
    if pod is None:
        return model.Pod()
    # Positional, through tuple.__new__: (namespace, name, annotations).
    return _new_tuple(model.Pod, (pod.namespace, pod.name, _mapping(pod.annotations)))


_new_tuple = tuple.__new__


def device_from_pb(d: nri_pb2.LinuxDevice) -> model.Device:
    return model.Device(
        path=d.path, type=d.type, major=d.major, minor=d.minor,
        file_mode=d.file_mode.value if d.HasField("file_mode") else None,
        uid=d.uid.value if d.HasField("uid") else None,
        gid=d.gid.value if d.HasField("gid") else None)


def _devices(linux) -> tuple[model.Device, ...]:
    # A device without a path cannot be matched or injected: skip just that one.
    return tuple(device_from_pb(d) for d in linux.devices if d.path)


def _rule(r: nri_pb2.LinuxDeviceCgroup) -> model.DeviceRule:
    # Positional, through tuple.__new__: (allow, type, major, minor, access).
    return _new_tuple(model.DeviceRule, (
        r.allow, r.type,
        r.major.value if r.HasField("major") else None,
        r.minor.value if r.HasField("minor") else None,
        r.access))


def env_from_pb(ctr: nri_pb2.Container | nri_pb2.ContainerRead | None) -> tuple[str, ...]:
    """The environment as the runtime has it: malformed entries are passed
    over by the decision's EnvSet, so no per-entry Python loop here (pods
    carry ~100 service vars); slicing is the quickest way out of upb."""
    return env_set_from_pb(ctr).entries()


def env_set_from_pb(ctr: nri_pb2.Container | nri_pb2.ContainerRead | None) -> EnvSet:
    """The environment as the decision reads it. ``ContainerRead`` carries the
    entries as bytes: joined and decoded once, one string for all of them;
    an entry that is not UTF-8 raises (the driver fails open, as for any
    request it cannot decode)."""
    entries = ctr.env[:] if ctr is not None else []
    if not entries or not isinstance(entries[0], bytes):
        return EnvSet(entries)
    if b"\0" in b"".join(entries):       # a NUL inside an entry: EnvSet looks at each
        return EnvSet([entry.decode() for entry in entries])
    entries.insert(0, b"")                 # each entry after a separator, the first too
    return EnvSet.of_joined(b"\0".join(entries).decode())


def _mount_destinations(mounts, containing: str) -> tuple[str, ...]:
    """Where the spec mounts something. ``ContainerRead`` carries each mount
    as its bytes (a dozen per container, on every request): only those that
    hold ``containing`` are decoded, as no other can have a destination that
    holds it."""
    if not mounts:
        return ()
    found = mounts[:]
    if not isinstance(found[0], bytes):                  # Container: decoded already
        return tuple([m.destination for m in found])
    return tuple([_read_mount(m).destination
                  for m in (_holding(found, containing) if containing else found)])


_read_mount = nri_pb2.MountRead.FromString
_read_annotation = nri_pb2.AnnotationRead.FromString
#: How the decode-only messages hand over a repeated field of raw entries.
_REPEATED = type(nri_pb2.ContainerRead().annotations)


def container_from_pb(ctr: nri_pb2.Container | nri_pb2.ContainerRead | None, *,
                      env: bool = True, mounts_containing: str = "") -> model.Container:
    """``env=False`` leaves ``Container.env`` empty, for a caller that reads
    the environment (``env_from_pb``) only once the container is selected.
    ``mounts_containing``: the destinations the caller reads all hold this
    text (``skip.overlay_mount_hint``): the others are left out."""
    if ctr is None:
        return model.Container()
    linux = ctr.linux if ctr.HasField("linux") else None
    devices = _devices(linux) if linux is not None and linux.devices else ()
    # The rules only ever say whether a device is allowed: without a device
    # nothing reads them (most containers, on every request).
    rules = tuple(_rule(r) for r in linux.resources.devices) \
        if devices and linux.HasField("resources") else ()
    # Positional, through tuple.__new__: model.Container's fields in order.
    return _new_tuple(model.Container, (
        ctr.name,
        _cdi_annotations(ctr.annotations),
        env_from_pb(ctr) if env else (),
        # The already-mounted rule reads destinations alone: sources and
        # options stay put.
        _mount_destinations(ctr.mounts, mounts_containing),
        devices,
        rules,
        # Newer NRI reports the CDI devices already injected; v0.6.1 has no such
        # field (its CRI requests show up only as cdi.k8s.io/ annotations).
        tuple([d.name for d in ctr.CDI_devices if d.name]) if ctr.CDI_devices else ()))


def device_to_pb(d: model.Device) -> nri_pb2.LinuxDevice:
    out = nri_pb2.LinuxDevice(path=d.path, type=d.type, major=d.major, minor=d.minor)
    if d.file_mode is not None:
        out.file_mode.value = d.file_mode
    if d.uid is not None:
        out.uid.value = d.uid
    if d.gid is not None:
        out.gid.value = d.gid
    return out


def adjustment_to_pb(adj: model.Adjustment | None,
                     accepts_cdi: bool) -> nri_pb2.ContainerAdjustment:
    """Render an Adjustment. CDI names are dropped for a runtime that would
    silently drop them itself (NRI v0.6.1); the decision is told the same
    through NodeView.runtime_accepts_cdi and should not emit them there."""
    out = nri_pb2.ContainerAdjustment()
    if adj is None:
        return out
    for m in adj.mounts:
        out.mounts.add(destination=m.destination, type=m.type, source=m.source,
                       options=list(m.options))
    for key, value in adj.env:
        out.env.add(key=key, value=value)
    for hook in adj.hooks:
        added = out.hooks.create_container.add(path=hook.path, args=list(hook.args), env=list(hook.env))
        if hook.timeout is not None:
            added.timeout.value = hook.timeout
    if adj.devices:
        out.linux.devices.extend(device_to_pb(d) for d in adj.devices)
    if accepts_cdi:
        for name in adj.cdi_devices:
            out.CDI_devices.add(name=name)
    return out


def response_bytes(adj: model.Adjustment | None, accepts_cdi: bool) -> bytes:
    """The serialized CreateContainerResponse; b"" when there is nothing to add."""
    out = adjustment_to_pb(adj, accepts_cdi)
    return nri_pb2.CreateContainerResponse(adjust=out).SerializeToString() if out.ByteSize() else b""
