"""The only translation between NRI protobuf and the decision's plain data.

Inbound (``pod_from_pb``, ``container_from_pb``) is nil-tolerant and copies
out of the runtime's messages what the decision reads, so nothing protobuf
reaches ``mokka.nri.inject``; a malformed entry is dropped, never a reason to
fail the container. It runs on every CreateContainer, so it reads no more than
that: mount sources and options, hooks, rlimits, args and labels are left in
the message.
Outbound, ``adjustment_to_pb`` renders an Adjustment, and ``ResponseEncoder``
the whole CreateContainerResponse as bytes, reusing the bytes of recent equal
adjustments; CDI names go into ContainerAdjustment.CDI_devices only for a
runtime that applies them.
"""

from __future__ import annotations

import threading

from mokka.nri.codec.ttrpc import encode_varint
from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2


def _mapping(pb_map) -> dict[str, str]:
    # A copy: the runtime's message stays its own. By key, as dict(pb_map)
    # goes through the Mapping ABC's Python-level iterator (twice as slow).
    return {key: pb_map[key] for key in pb_map} if pb_map else {}


def pod_from_pb(pod: nri_pb2.PodSandbox | None) -> model.Pod:
    if pod is None:
        return model.Pod()
    return model.Pod(namespace=pod.namespace, name=pod.name, uid=pod.uid,
                     annotations=_mapping(pod.annotations))


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


def container_from_pb(ctr: nri_pb2.Container | None) -> model.Container:
    if ctr is None:
        return model.Container()
    linux = ctr.linux if ctr.HasField("linux") else None
    resources = linux.resources if linux is not None and linux.HasField("resources") else None
    devices = _devices(linux) if linux is not None else ()
    return model.Container(
        name=ctr.name, id=ctr.id,
        annotations=_mapping(ctr.annotations),
        # As the runtime has it: malformed entries are passed over by the decision's
        # EnvSet, so no per-entry Python loop here (pods carry ~100 service vars).
        env=tuple(ctr.env[:]),               # slicing is the quickest way out of upb
        # The already-mounted rule reads destinations alone (a dozen mounts
        # per container, on every request: sources and options stay put).
        mount_destinations=tuple([m.destination for m in ctr.mounts]),
        devices=devices,
        # The rules only ever say whether a device is allowed: without a
        # device nothing reads them (most containers, on every request).
        device_rules=tuple(_rule(r) for r in resources.devices)
        if devices and resources is not None else (),
        # Newer NRI reports the CDI devices already injected; v0.6.1 has no such
        # field (its CRI requests show up only as cdi.k8s.io/ annotations).
        cdi_devices=tuple(d.name for d in ctr.CDI_devices if d.name))


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


#: CreateContainerResponse.adjust (field 1, length-delimited).
_ADJUST_TAG = b"\x0a"


class ResponseEncoder:
    """Adjustment -> serialized CreateContainerResponse, reusing recent bytes.

    On a node the same few adjustments recur (one per node view and selection,
    times the few PATHs images carry), built from the node view's very objects,
    so comparing with a recent one is mostly pointer checks (tuples compare
    identical items without looking inside). The device list, which for IMEX
    is a node's 2048 channels, is cached on its own: an adjustment that differs
    only in env re-encodes its env and mounts, never the devices.

    The bytes are the ones ``adjustment_to_pb`` gives, as protobuf merges
    concatenated encodings of one message type and fields go in number order.
    """

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._responses: list[tuple[model.Adjustment, bool, bytes]] = []
        self._devices: list[tuple[tuple[model.Device, ...], bytes]] = []

    def encode(self, adj: model.Adjustment, accepts_cdi: bool) -> bytes:
        with self._lock:
            for i, (seen, accepts, data) in enumerate(self._responses):
                if accepts == accepts_cdi and seen == adj:
                    if i:
                        self._responses.insert(0, self._responses.pop(i))
                    return data
        data = self._render(adj, accepts_cdi)
        with self._lock:
            self._responses.insert(0, (adj, accepts_cdi, data))
            del self._responses[self._size:]
        return data

    def _render(self, adj: model.Adjustment, accepts_cdi: bool) -> bytes:
        head = adjustment_to_pb(model.Adjustment(mounts=adj.mounts, env=adj.env, hooks=adj.hooks),
                                False).SerializeToString()
        body = head + self._devices_bytes(adj.devices)
        if accepts_cdi and adj.cdi_devices:
            body += adjustment_to_pb(model.Adjustment(cdi_devices=adj.cdi_devices),
                                     True).SerializeToString()
        return _ADJUST_TAG + encode_varint(len(body)) + body if body else b""

    def _devices_bytes(self, devices: tuple[model.Device, ...]) -> bytes:
        if not devices:
            return b""
        with self._lock:
            for i, (seen, data) in enumerate(self._devices):
                if len(seen) == len(devices) and seen == devices:
                    return data
        data = adjustment_to_pb(model.Adjustment(devices=devices), False).SerializeToString()
        with self._lock:
            self._devices.insert(0, (devices, data))
            del self._devices[self._size:]
        return data
