"""The only translation between NRI protobuf and the decision's plain data.

Inbound (``pod_from_pb``, ``container_from_pb``) is nil-tolerant and copies
everything out of the runtime's messages, so nothing protobuf reaches
``mokka.nri.inject``; a malformed entry is dropped, never a reason to fail the
container. Outbound, ``adjustment_to_pb`` renders an Adjustment; CDI names go
into ContainerAdjustment.CDI_devices only for a runtime that applies them.
"""

from __future__ import annotations

from mokka.nri.inject import model
from mokka.nri.proto import nri_pb2


def _mapping(pb_map) -> dict[str, str]:
    return dict(pb_map or {})         # a copy: the runtime's message stays its own


def pod_from_pb(pod: nri_pb2.PodSandbox | None) -> model.Pod:
    if pod is None:
        return model.Pod()
    return model.Pod(namespace=pod.namespace, name=pod.name, uid=pod.uid,
                     annotations=_mapping(pod.annotations))


def _mount(m: nri_pb2.Mount) -> model.Mount:
    return model.Mount(destination=m.destination, source=m.source, type=m.type,
                       options=tuple(m.options))


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
    return model.DeviceRule(
        allow=r.allow, type=r.type, access=r.access,
        major=r.major.value if r.HasField("major") else None,
        minor=r.minor.value if r.HasField("minor") else None)


def container_from_pb(ctr: nri_pb2.Container | None) -> model.Container:
    if ctr is None:
        return model.Container()
    linux = ctr.linux if ctr.HasField("linux") else None
    resources = linux.resources if linux is not None and linux.HasField("resources") else None
    return model.Container(
        name=ctr.name, id=ctr.id,
        annotations=_mapping(ctr.annotations),
        # As the runtime has it: malformed entries are passed over by the decision's
        # EnvSet, so no per-entry Python loop here (pods carry ~100 service vars).
        env=tuple(ctr.env),
        mounts=tuple(_mount(m) for m in ctr.mounts),
        devices=_devices(linux) if linux is not None else (),
        device_rules=tuple(_rule(r) for r in resources.devices) if resources is not None else (),
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
    if adj.devices:
        out.linux.devices.extend(device_to_pb(d) for d in adj.devices)
    if accepts_cdi:
        for name in adj.cdi_devices:
            out.CDI_devices.add(name=name)
    return out
